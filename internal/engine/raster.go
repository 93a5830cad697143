package engine

import (
	"image"
	"image/color"
	"math"
)

// raster is a float image: four float32 per pixel (R, G, B, A), colour
// premultiplied by alpha, row after row. Whether the colour is sRGB-encoded
// or linear light depends on the stage: see Enhance.
type raster struct {
	w, h int
	pix  []float32
}

func newRaster(w, h int) *raster {
	return &raster{w: w, h: h, pix: make([]float32, 4*w*h)}
}

func (r *raster) row(y int) []float32 { return r.pix[4*y*r.w : 4*(y+1)*r.w] }

// lutSize intervals make the interpolated curves below exact to about 2e-5,
// a fiftieth of an 8-bit step.
const lutSize = 4096

var (
	toLinearLUT = curveLUT(srgbToLinear)
	toSRGBLUT   = curveLUT(linearToSRGB)
)

func srgbToLinear(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

func linearToSRGB(v float64) float64 {
	if v <= 0.0031308 {
		return v * 12.92
	}
	return 1.055*math.Pow(v, 1/2.4) - 0.055
}

func curveLUT(f func(float64) float64) *[lutSize + 2]float32 {
	var t [lutSize + 2]float32
	for i := range lutSize + 1 {
		t[i] = float32(f(float64(i) / lutSize))
	}
	t[lutSize+1] = t[lutSize] // lets lookup read i+1 at v == 1
	return &t
}

// lookup evaluates a curve at v, clamped to [0, 1], by linear interpolation.
func lookup(t *[lutSize + 2]float32, v float32) float32 {
	if !(v > 0) { // NaN too
		return 0
	}
	if v >= 1 {
		return t[lutSize]
	}
	x := v * lutSize
	i := int(x)
	f := x - float32(i)
	return t[i] + f*(t[i+1]-t[i])
}

// fromImage converts a decoded image to premultiplied sRGB-encoded floats,
// the space the source filters work in.
func fromImage(run *runner, m image.Image, units float64) (*raster, error) {
	b := m.Bounds()
	r := newRaster(b.Dx(), b.Dy())
	const k = 1.0 / 255
	err := run.each(r.h, stripRows, units, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			dst := r.row(y)
			sy := b.Min.Y + y
			switch m := m.(type) {
			case *image.YCbCr: // JPEG, lossy WebP
				for x := range r.w {
					sx := b.Min.X + x
					yi, ci := m.YOffset(sx, sy), m.COffset(sx, sy)
					cr, cg, cb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
					setPixel(dst[4*x:4*x+4], float32(cr)*k, float32(cg)*k, float32(cb)*k, 1)
				}
			case *image.NYCbCrA: // lossy WebP with alpha
				for x := range r.w {
					sx := b.Min.X + x
					yi, ci := m.YOffset(sx, sy), m.COffset(sx, sy)
					cr, cg, cb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
					a := float32(m.A[m.AOffset(sx, sy)]) * k
					setPixel(dst[4*x:4*x+4], float32(cr)*k*a, float32(cg)*k*a, float32(cb)*k*a, a)
				}
			case *image.NRGBA: // PNG, lossless WebP
				src := m.Pix[m.PixOffset(b.Min.X, sy):]
				for x := range r.w {
					s := src[4*x : 4*x+4]
					a := float32(s[3]) * k
					setPixel(dst[4*x:4*x+4], float32(s[0])*k*a, float32(s[1])*k*a, float32(s[2])*k*a, a)
				}
			case *image.RGBA: // PNG; already premultiplied
				src := m.Pix[m.PixOffset(b.Min.X, sy):]
				for x := range r.w {
					s := src[4*x : 4*x+4]
					setPixel(dst[4*x:4*x+4], float32(s[0])*k, float32(s[1])*k, float32(s[2])*k, float32(s[3])*k)
				}
			case *image.Gray: // PNG, greyscale JPEG
				src := m.Pix[m.PixOffset(b.Min.X, sy):]
				for x := range r.w {
					v := float32(src[x]) * k
					setPixel(dst[4*x:4*x+4], v, v, v, 1)
				}
			default: // 16-bit and paletted PNG, CMYK JPEG: slower, just as exact
				const k16 = 1.0 / 0xffff
				for x := range r.w {
					cr, cg, cb, ca := m.At(b.Min.X+x, sy).RGBA() // premultiplied
					setPixel(dst[4*x:4*x+4], float32(cr)*k16, float32(cg)*k16, float32(cb)*k16, float32(ca)*k16)
				}
			}
		}
	})
	return r, err
}

func setPixel(p []float32, r, g, b, a float32) { p[0], p[1], p[2], p[3] = r, g, b, a }

// toLinear converts premultiplied sRGB-encoded floats to premultiplied
// linear light in place, the space where averaging pixels (resampling) is
// physically right.
func toLinear(run *runner, r *raster, units float64) error {
	return run.each(r.h, stripRows, units, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := r.row(y)
			for i := 0; i < len(row); i += 4 {
				p := row[i : i+4 : i+4]
				a := p[3]
				if !(a > 0) {
					setPixel(p, 0, 0, 0, 0)
					continue
				}
				a = min(a, 1)
				p[0] = lookup(toLinearLUT, p[0]/a) * a
				p[1] = lookup(toLinearLUT, p[1]/a) * a
				p[2] = lookup(toLinearLUT, p[2]/a) * a
				p[3] = a
			}
		}
	})
}

// to8 converts one premultiplied linear pixel to 8-bit sRGB-encoded,
// unpremultiplied colour; over white when the output has no alpha (JPEG),
// compositing in sRGB as browsers do.
func to8(p []float32, overWhite bool) (r, g, b, a uint8) {
	al := min(max(p[3], 0), 1)
	if al < 0.5/255 {
		if overWhite {
			return 255, 255, 255, 255
		}
		return 0, 0, 0, 0
	}
	cr := lookup(toSRGBLUT, p[0]/al)
	cg := lookup(toSRGBLUT, p[1]/al)
	cb := lookup(toSRGBLUT, p[2]/al)
	if overWhite {
		cr, cg, cb, al = cr*al+1-al, cg*al+1-al, cb*al+1-al, 1
	}
	return quantize(cr), quantize(cg), quantize(cb), quantize(al)
}

func quantize(v float32) uint8 { return uint8(min(max(v, 0), 1)*255 + 0.5) }
