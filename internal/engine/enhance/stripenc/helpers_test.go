package stripenc

import (
	"image"
	"image/color"
	"math"
)

// photoPixel is a stand-in for a photograph: smooth gradients, hard-edged
// patches and a deterministic grain, so that encoders meet the statistics
// of real images (a flat or random image would flatter or punish them).
func photoPixel(x, y, width, height int) (r, g, b uint8) {
	fx, fy := float64(x)/float64(width), float64(y)/float64(height)
	rf := 128 + 90*math.Sin(5*fx+2*fy)
	gf := 110 + 70*math.Cos(3*fy-4*fx)
	bf := 95 + 60*math.Sin(8*fx*fy+1)
	if (x*8/width+y*6/height)%4 == 0 {
		rf, gf, bf = 225+10*fx, 205, 45+20*fy
	}
	// A hash of the position: the same grain on every run and in every strip.
	h := uint32(x)*0x9e3779b1 ^ uint32(y)*0x85ebca77
	h ^= h >> 15
	h *= 0x2c1b3c6d
	h ^= h >> 12
	n := float64(int(h&15)) - 7.5
	return clamp8(rf + n), clamp8(gf + n*0.9), clamp8(bf + n*1.1)
}

func clamp8(v float64) uint8 { return uint8(math.Round(min(max(v, 0), 255))) }

// photoRGBA fills dst's rows as part of a width x height photo.
func photoRGBA(width, height int) FillRGBA {
	return func(dst *image.RGBA) error {
		b := dst.Rect
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl := photoPixel(x, y, width, height)
				dst.SetRGBA(x, y, color.RGBA{r, g, bl, 255})
			}
		}
		return nil
	}
}

// photoNRGBA is photoRGBA with an alpha channel: opaque when alpha is nil,
// else alpha(x, y).
func photoNRGBA(width, height int, alpha func(x, y int) uint8) FillNRGBA {
	return func(dst *image.NRGBA) error {
		b := dst.Rect
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl := photoPixel(x, y, width, height)
				a := uint8(255)
				if alpha != nil {
					a = alpha(x, y)
				}
				dst.SetNRGBA(x, y, color.NRGBA{r, g, bl, a})
			}
		}
		return nil
	}
}

// wholeRGBA is the image fill draws, computed at once.
func wholeRGBA(width, height int, fill FillRGBA) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, width, height))
	if err := fill(m); err != nil {
		panic(err)
	}
	return m
}

func wholeNRGBA(width, height int, fill FillNRGBA) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, width, height))
	if err := fill(m); err != nil {
		panic(err)
	}
	return m
}
