package generate

import (
	"context"
	"errors"
	"testing"

	"genjobs/internal/engine"
	"genjobs/internal/engine/enginetest"
)

// A generation input whose header claims more than its data can hold is
// refused before the decoder allocates the image it claims.
func TestALyingHeaderCostsLittle(t *testing.T) {
	for name, data := range map[string][]byte{"PNG 9000 x 9000 x 64 bits": enginetest.LyingPNG(9000, 9000), "JPEG 9000 x 9000": enginetest.LyingJPEG(t, 9000, 9000)} {
		var err error
		n := enginetest.Allocated(func() {
			_, err = decodeGenInput(context.Background(), engine.Input{Field: "image", Data: data})
		})
		if !errors.Is(err, engine.ErrInvalidInput) {
			t.Errorf("generation input, %s: %v; want invalid input", name, err)
		}
		if n > enginetest.LieBudget {
			t.Errorf("generation input, %s: decoding allocated %d MiB; want under 64 MiB", name, n>>20)
		}
	}
}
