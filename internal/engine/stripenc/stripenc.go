// Package stripenc encodes images whose pixels are produced strip by strip.
//
// This is a stand-in with the final package's signatures: it fills the whole
// image, then hands it to the standard library's or nativewebp's encoder, so
// it holds the whole output in memory. The streaming encoders replace it.
package stripenc

import (
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"sync"
	"sync/atomic"

	"github.com/HugoSmits86/nativewebp"
)

// FillRGBA fills rows dst.Rect.Min.Y..Max.Y-1 of dst (dst.Rect is
// (0,y0)-(width,y1)). It is called concurrently for disjoint strips.
type FillRGBA func(dst *image.RGBA) error

// FillNRGBA is FillRGBA for non-premultiplied pixels.
type FillNRGBA func(dst *image.NRGBA) error

// stripRows is the height of the strips the stand-in asks for, as the
// streaming encoders do.
const stripRows = 64

// JPEG writes a width x height baseline JPEG at quality.
func JPEG(w io.Writer, width, height, quality, workers int, fill FillRGBA) error {
	m := image.NewRGBA(image.Rect(0, 0, width, height))
	err := fillStrips(height, workers, func(y0, y1 int) error {
		return fill(m.SubImage(image.Rect(0, y0, width, y1)).(*image.RGBA))
	})
	if err != nil {
		return err
	}
	return jpeg.Encode(w, m, &jpeg.Options{Quality: quality})
}

// PNG writes a width x height PNG.
func PNG(w io.Writer, width, height, workers int, fill FillNRGBA) error {
	m, err := fillNRGBA(width, height, workers, fill)
	if err != nil {
		return err
	}
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	return enc.Encode(w, m)
}

// WebP writes a width x height lossless WebP. The encoder holds the whole
// image: the caller bounds its size.
func WebP(w io.Writer, width, height, workers int, fill FillNRGBA) error {
	m, err := fillNRGBA(width, height, workers, fill)
	if err != nil {
		return err
	}
	return nativewebp.Encode(w, m, nil)
}

func fillNRGBA(width, height, workers int, fill FillNRGBA) (*image.NRGBA, error) {
	m := image.NewNRGBA(image.Rect(0, 0, width, height))
	err := fillStrips(height, workers, func(y0, y1 int) error {
		return fill(m.SubImage(image.Rect(0, y0, width, y1)).(*image.NRGBA))
	})
	return m, err
}

// fillStrips calls fill for every strip of stripRows rows on workers
// goroutines, and returns the first error, after which no strip starts.
func fillStrips(height, workers int, fill func(y0, y1 int) error) error {
	strips := (height + stripRows - 1) / stripRows
	var next atomic.Int64
	var once sync.Once
	var first error
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range max(min(workers, strips), 1) {
		wg.Go(func() {
			for !failed.Load() {
				s := int(next.Add(1) - 1)
				if s >= strips {
					return
				}
				if err := fill(s*stripRows, min((s+1)*stripRows, height)); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return first
}
