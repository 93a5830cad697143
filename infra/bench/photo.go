package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"

	"genjobs/internal/asset"
)

// photoSide is the side of the source image of every enhance the bench
// runs, in pixels.
const photoSide = 1024

// photoPNG is a stand-in for a photograph, as a PNG of side x side: smooth
// colour gradients, a few hard-edged patches and a little per-pixel grain,
// the same bytes on every run. The grain matters: it keeps the PNG the size
// of a real photo's (1 to 2 MB) rather than of a flat drawing, and gives the
// engine's denoise and sharpen real work. It must fit a POST /assets body.
func photoPNG(side int) ([]byte, error) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, photo(side)); err != nil {
		return nil, err
	}
	if buf.Len() > asset.MaxDirectBytes {
		return nil, fmt.Errorf("the synthetic %dx%d photo is %d B as PNG, over the %d B of a POST /assets body",
			side, side, buf.Len(), asset.MaxDirectBytes)
	}
	return buf.Bytes(), nil
}

// photoJPEG is the same photo as a quality-90 JPEG (4:2:0), as a camera or
// a phone would save it.
func photoJPEG(side int) ([]byte, error) {
	var buf bytes.Buffer
	err := jpeg.Encode(&buf, photo(side), &jpeg.Options{Quality: 90})
	return buf.Bytes(), err
}

func photo(side int) *image.NRGBA {
	rng := rand.New(rand.NewPCG(uint64(side), 1337))
	m := image.NewNRGBA(image.Rect(0, 0, side, side))
	for y := range side {
		for x := range side {
			fx, fy := float64(x)/float64(side), float64(y)/float64(side)
			r := 128 + 90*math.Sin(5*fx+2*fy)
			g := 110 + 70*math.Cos(3*fy-4*fx)
			b := 95 + 60*math.Sin(8*fx*fy+1)
			if (x/(side/8)+y/(side/6))%4 == 0 { // hard edges, as objects have
				r, g, b = 225+10*fx, 205, 45+20*fy
			}
			n := rng.NormFloat64() * 5
			m.SetNRGBA(x, y, color.NRGBA{clamp8(r + n), clamp8(g + n*0.9), clamp8(b + n*1.1), 255})
		}
	}
	return m
}

func clamp8(v float64) uint8 { return uint8(math.Round(min(max(v, 0), 255))) }
