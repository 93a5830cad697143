package stripenc

import (
	"fmt"
	"image"
	"io"

	"github.com/HugoSmits86/nativewebp"
)

// maxWebPSide is the largest width or height VP8L stores (14 bits).
const maxWebPSide = 16383

// WebP writes a lossless WebP of width x height. Its encoder
// (nativewebp: pure Go, as the functions build without cgo, and the only
// one to be had here; it writes lossless VP8L only) needs the whole image,
// so only the filling runs in strips, on up to workers goroutines, and the
// caller bounds the image's size (engine.MaxWebPPixels).
func WebP(w io.Writer, width, height, workers int, fill FillNRGBA) error {
	if width < 1 || height < 1 || width > maxWebPSide || height > maxWebPSide {
		return fmt.Errorf("stripenc: a WebP of %d x %d pixels cannot be encoded (each side 1 to %d)",
			width, height, maxWebPSide)
	}
	m := image.NewNRGBA(image.Rect(0, 0, width, height))
	rows := stripRows(width)
	run := &stripRun[struct{}, struct{}]{
		n:        (height + rows - 1) / rows,
		workers:  workers,
		window:   2 * workers,
		newState: func() struct{} { return struct{}{} },
		produce: func(_ struct{}, i int, _ *struct{}) error {
			y0 := i * rows
			y1 := min(y0+rows, height)
			// Its own rows only: a fill that ranges over Pix must not reach the next strip.
			pix := m.Pix[y0*m.Stride : y1*m.Stride : y1*m.Stride]
			return fill(&image.NRGBA{Pix: pix, Stride: m.Stride, Rect: image.Rect(0, y0, width, y1)})
		},
		consume: func(int, *struct{}) error { return nil },
	}
	if err := run.run(); err != nil {
		return err
	}
	return nativewebp.Encode(w, m, nil)
}
