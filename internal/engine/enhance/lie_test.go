package enhance

import (
	"encoding/base64"
	"errors"
	"testing"

	"genjobs/internal/engine"
	"genjobs/internal/engine/enginetest"
)

// A 114-character data: URI whose PNG claims 14000 x 14000 at 16 bits
// made the decoder allocate ~1.5 GB before failing. A header the data
// cannot back is refused first, for a few bytes of heap.
func TestALyingHeaderCostsLittle(t *testing.T) {
	png14k := enginetest.LyingPNG(14000, 14000)
	if uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png14k); len(uri) > 130 {
		t.Fatalf("the lying PNG is a %d-character data: URI; want about 114", len(uri))
	}
	for name, data := range map[string][]byte{"PNG 14000 x 14000 x 64 bits": png14k, "JPEG 14000 x 14000": enginetest.LyingJPEG(t, 14000, 14000)} {
		var err error
		n := enginetest.Allocated(func() {
			var f *engine.Format
			if f, _, err = sniff(data, ""); err == nil {
				_, err = read(f, data, nil)
			}
		})
		if !errors.Is(err, engine.ErrInvalidInput) {
			t.Errorf("enhance, %s: %v; want invalid input", name, err)
		}
		if n > enginetest.LieBudget {
			t.Errorf("enhance, %s: decoding allocated %d MiB; want under 64 MiB", name, n>>20)
		}
	}
}
