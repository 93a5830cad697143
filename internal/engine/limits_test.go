package engine_test

import (
	"testing"

	"genjobs/internal/catalog"
	"genjobs/internal/engine"
)

// The catalog refuses at creation what the enhance engine cannot encode, so
// that no such job is queued only to fail.
func TestCatalogKnowsTheOutputLimits(t *testing.T) {
	if catalog.MaxOutputPixels != engine.MaxOutputPixels {
		t.Errorf("catalog allows outputs of %d pixels; the engine %d", catalog.MaxOutputPixels, engine.MaxOutputPixels)
	}
	if catalog.MaxWebPSide != engine.MaxWebPSide || catalog.MaxWebPPixels != engine.MaxWebPPixels {
		t.Errorf("catalog allows webp up to %d a side, %d in all; the engine %d, %d",
			catalog.MaxWebPSide, catalog.MaxWebPPixels, engine.MaxWebPSide, engine.MaxWebPPixels)
	}
}
