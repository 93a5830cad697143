package enhance

import (
	"image"
	"image/color"
	"math"
)

// Pixels inside the pipeline are four float32 (R, G, B, A), colour
// premultiplied by alpha; the colour is sRGB-encoded where the source
// filters work and linear light everywhere else (see Engine).

// lutSize intervals make the interpolated curves below exact to about 2e-5,
// a fiftieth of an 8-bit step.
const lutSize = 4096

// The curves' tables, toLinearLUT = curveLUT(srgbToLinear) and toSRGBLUT =
// curveLUT(linearToSRGB), are constants in curves_gen.go: computing their
// 8,194 powers at init took about 0.3 ms of every cold start of the worker
// and the light worker. TestCurveTablesAreTheCurves holds them to curveLUT
// (and rewrites the file with -update-curves).

var (
	// linear8 is the exact linear value of each 8-bit sRGB-encoded value.
	linear8 = func() (t [256]float32) {
		for i := range t {
			t[i] = float32(srgbToLinear(float64(i) / 255))
		}
		return t
	}()
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

func setPixel(p []float32, r, g, b, a float32) { p[0], p[1], p[2], p[3] = r, g, b, a }

// toLinearPixel converts a premultiplied sRGB-encoded pixel to premultiplied
// linear light in place, the space where averaging pixels (resampling) is
// physically right.
func toLinearPixel(p []float32) {
	a := p[3]
	if !(a > 0) {
		setPixel(p, 0, 0, 0, 0)
		return
	}
	a = min(a, 1)
	p[0] = lookup(toLinearLUT, p[0]/a) * a
	p[1] = lookup(toLinearLUT, p[1]/a) * a
	p[2] = lookup(toLinearLUT, p[2]/a) * a
	p[3] = a
}

// toLinearRow converts a row of premultiplied sRGB-encoded pixels into dst.
func toLinearRow(dst, src []float32) {
	copy(dst, src)
	for i := 0; i+4 <= len(dst); i += 4 {
		toLinearPixel(dst[i : i+4 : i+4])
	}
}

// source is the decoded image, kept as its decoder made it: 8 bits a
// channel, and JPEG's chroma at a quarter resolution (1.5 bytes a pixel),
// far smaller than a float copy. Rows are converted as the pipeline asks
// for them.
type source struct {
	w, h   int
	opaque bool // every pixel's alpha is 1
	// encoded writes premultiplied sRGB-encoded pixels x0.. of row y into
	// dst, len(dst)/4 of them; linear the same in linear light.
	encoded, linear func(dst []float32, x0, y int)
}

const by255 = 1.0 / 255

func newSource(m image.Image) *source {
	b := m.Bounds()
	s := &source{w: b.Dx(), h: b.Dy()}
	if o, ok := m.(interface{ Opaque() bool }); ok { // JPEG's at once; others scan their alpha
		s.opaque = o.Opaque()
	}
	ox, oy := b.Min.X, b.Min.Y
	switch m := m.(type) {
	case *image.YCbCr: // JPEG, lossy WebP
		s.encoded = func(dst []float32, x0, y int) { ycbcrRow(dst, m, nil, ox+x0, oy+y, false) }
		s.linear = func(dst []float32, x0, y int) { ycbcrRow(dst, m, nil, ox+x0, oy+y, true) }
	case *image.NYCbCrA: // lossy WebP with alpha
		s.encoded = func(dst []float32, x0, y int) { ycbcrRow(dst, &m.YCbCr, m, ox+x0, oy+y, false) }
		s.linear = func(dst []float32, x0, y int) { ycbcrRow(dst, &m.YCbCr, m, ox+x0, oy+y, true) }
	case *image.NRGBA: // PNG, lossless WebP
		s.encoded = func(dst []float32, x0, y int) { nrgbaRow(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], false) }
		s.linear = func(dst []float32, x0, y int) { nrgbaRow(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], true) }
	case *image.RGBA: // PNG without alpha; premultiplied
		s.encoded = func(dst []float32, x0, y int) { rgbaRow(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], false) }
		s.linear = func(dst []float32, x0, y int) { rgbaRow(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], true) }
	case *image.Gray: // PNG, greyscale JPEG
		s.encoded = func(dst []float32, x0, y int) { grayRow(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], false) }
		s.linear = func(dst []float32, x0, y int) { grayRow(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], true) }
	case *image.RGBA64: // 16-bit PNG without alpha; premultiplied
		s.encoded = func(dst []float32, x0, y int) { rgba64Row(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], true, false) }
		s.linear = func(dst []float32, x0, y int) { rgba64Row(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], true, true) }
	case *image.NRGBA64: // 16-bit PNG
		s.encoded = func(dst []float32, x0, y int) { rgba64Row(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], false, false) }
		s.linear = func(dst []float32, x0, y int) { rgba64Row(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], false, true) }
	case *image.Gray16: // 16-bit PNG
		s.encoded = func(dst []float32, x0, y int) { gray16Row(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], false) }
		s.linear = func(dst []float32, x0, y int) { gray16Row(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], true) }
	case *image.Paletted: // PNG
		enc, lin := paletteTables(m.Palette)
		s.encoded = func(dst []float32, x0, y int) { palettedRow(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], enc) }
		s.linear = func(dst []float32, x0, y int) { palettedRow(dst, m.Pix[m.PixOffset(ox+x0, oy+y):], lin) }
	default: // CMYK JPEG: slower, just as exact
		s.encoded = func(dst []float32, x0, y int) { anyRow(dst, m, ox+x0, oy+y) }
		s.linear = func(dst []float32, x0, y int) {
			anyRow(dst, m, ox+x0, oy+y)
			for i := 0; i+4 <= len(dst); i += 4 {
				toLinearPixel(dst[i : i+4 : i+4])
			}
		}
	}
	return s
}

// chromaShift is how far r subsamples chroma: x and y as shifts.
func chromaShift(r image.YCbCrSubsampleRatio) (sx, sy uint) {
	switch r {
	case image.YCbCrSubsampleRatio422:
		return 1, 0
	case image.YCbCrSubsampleRatio420:
		return 1, 1
	case image.YCbCrSubsampleRatio440:
		return 0, 1
	case image.YCbCrSubsampleRatio411:
		return 2, 0
	case image.YCbCrSubsampleRatio410:
		return 2, 1
	}
	return 0, 0
}

// ycbcrRow converts pixels x.. of row y of m; alpha, when not nil, holds
// their (non-premultiplied) alpha.
func ycbcrRow(dst []float32, m *image.YCbCr, alpha *image.NYCbCrA, x, y int, linear bool) {
	n := len(dst) / 4
	sx, sy := chromaShift(m.SubsampleRatio)
	ys := m.Y[m.YOffset(x, y):]
	cBase := (y>>sy-m.Rect.Min.Y>>sy)*m.CStride - m.Rect.Min.X>>sx
	var as []uint8
	if alpha != nil {
		as = alpha.A[alpha.AOffset(x, y):]
	}
	for i := range n {
		ci := cBase + (x+i)>>sx
		r, g, b := color.YCbCrToRGB(ys[i], m.Cb[ci], m.Cr[ci])
		p := dst[4*i : 4*i+4 : 4*i+4]
		a := float32(1)
		if as != nil {
			a = float32(as[i]) * by255
		}
		if linear {
			setPixel(p, linear8[r]*a, linear8[g]*a, linear8[b]*a, a)
		} else {
			setPixel(p, float32(r)*by255*a, float32(g)*by255*a, float32(b)*by255*a, a)
		}
	}
}

func nrgbaRow(dst []float32, pix []uint8, linear bool) {
	for i := range len(dst) / 4 {
		s := pix[4*i : 4*i+4 : 4*i+4]
		p := dst[4*i : 4*i+4 : 4*i+4]
		a := float32(s[3]) * by255
		if linear {
			setPixel(p, linear8[s[0]]*a, linear8[s[1]]*a, linear8[s[2]]*a, a)
		} else {
			setPixel(p, float32(s[0])*by255*a, float32(s[1])*by255*a, float32(s[2])*by255*a, a)
		}
	}
}

func rgbaRow(dst []float32, pix []uint8, linear bool) {
	for i := range len(dst) / 4 {
		s := pix[4*i : 4*i+4 : 4*i+4]
		p := dst[4*i : 4*i+4 : 4*i+4]
		switch {
		case linear && s[3] == 255:
			setPixel(p, linear8[s[0]], linear8[s[1]], linear8[s[2]], 1)
		default:
			setPixel(p, float32(s[0])*by255, float32(s[1])*by255, float32(s[2])*by255, float32(s[3])*by255)
			if linear {
				toLinearPixel(p)
			}
		}
	}
}

func grayRow(dst []float32, pix []uint8, linear bool) {
	for i, v := range pix[:len(dst)/4] {
		c := float32(v) * by255
		if linear {
			c = linear8[v]
		}
		setPixel(dst[4*i:4*i+4:4*i+4], c, c, c, 1)
	}
}

const by65535 = 1.0 / 0xffff

// rgba64Row converts 16-bit big-endian RGBA pixels, premultiplied or not.
func rgba64Row(dst []float32, pix []uint8, premultiplied, linear bool) {
	for i := range len(dst) / 4 {
		s := pix[8*i : 8*i+8 : 8*i+8]
		p := dst[4*i : 4*i+4 : 4*i+4]
		a := float32(uint16(s[6])<<8|uint16(s[7])) * by65535
		k := float32(by65535)
		if !premultiplied {
			k *= a
		}
		setPixel(p, float32(uint16(s[0])<<8|uint16(s[1]))*k, float32(uint16(s[2])<<8|uint16(s[3]))*k,
			float32(uint16(s[4])<<8|uint16(s[5]))*k, a)
		if linear {
			toLinearPixel(p)
		}
	}
}

func gray16Row(dst []float32, pix []uint8, linear bool) {
	for i := range len(dst) / 4 {
		c := float32(uint16(pix[2*i])<<8|uint16(pix[2*i+1])) * by65535
		if linear {
			c = lookup(toLinearLUT, c)
		}
		setPixel(dst[4*i:4*i+4:4*i+4], c, c, c, 1)
	}
}

// paletteTables are a palette's colours as premultiplied encoded and linear
// pixels; indices past its end are transparent.
func paletteTables(pal color.Palette) (enc, lin *[256][4]float32) {
	enc, lin = new([256][4]float32), new([256][4]float32)
	for i, c := range pal[:min(len(pal), 256)] {
		if c == nil {
			continue
		}
		r, g, b, a := c.RGBA()
		enc[i] = [4]float32{float32(r) / 0xffff, float32(g) / 0xffff, float32(b) / 0xffff, float32(a) / 0xffff}
		lin[i] = enc[i]
		toLinearPixel(lin[i][:])
	}
	return enc, lin
}

func palettedRow(dst []float32, pix []uint8, table *[256][4]float32) {
	for i, v := range pix[:len(dst)/4] {
		copy(dst[4*i:4*i+4], table[v][:])
	}
}

// anyRow converts through the image's own colour model: an interface call a
// pixel, for formats no photo comes in.
func anyRow(dst []float32, m image.Image, x, y int) {
	const k16 = 1.0 / 0xffff
	if m64, ok := m.(image.RGBA64Image); ok {
		for i := range len(dst) / 4 {
			c := m64.RGBA64At(x+i, y) // premultiplied
			setPixel(dst[4*i:4*i+4], float32(c.R)*k16, float32(c.G)*k16, float32(c.B)*k16, float32(c.A)*k16)
		}
		return
	}
	for i := range len(dst) / 4 {
		r, g, b, a := m.At(x+i, y).RGBA()
		setPixel(dst[4*i:4*i+4], float32(r)*k16, float32(g)*k16, float32(b)*k16, float32(a)*k16)
	}
}

// to8 converts one premultiplied linear pixel to 8-bit sRGB-encoded,
// unpremultiplied colour; over white when the output has no alpha (JPEG),
// compositing in sRGB as browsers do.
func to8(p []float32, overWhite bool) (r, g, b, a uint8) {
	al := min(max(p[3], 0), 1)
	if al >= opaque { // a photo's pixels, nearly all
		return encode8(p[0]), encode8(p[1]), encode8(p[2]), 255
	}
	if al < 0.5/255 {
		if overWhite {
			return 255, 255, 255, 255
		}
		return 0, 0, 0, 0
	}
	if !overWhite {
		return encode8(p[0] / al), encode8(p[1] / al), encode8(p[2] / al), quantize(al)
	}
	cr := lookup(toSRGBLUT, p[0]/al)
	cg := lookup(toSRGBLUT, p[1]/al)
	cb := lookup(toSRGBLUT, p[2]/al)
	return quantize(cr*al + 1 - al), quantize(cg*al + 1 - al), quantize(cb*al + 1 - al), 255
}

// opaque is the alpha taken for 1: resampling an opaque image sums float32
// weights that miss 1 by an ulp or two.
const opaque = 1 - 1.0/(1<<16)

func quantize(v float32) uint8 { return uint8(min(max(v, 0), 1)*255 + 0.5) }

// encode8 is the 8-bit sRGB encoding of a linear value, rounded to nearest:
// a table gives the code at the start of v's 1/4096 interval, and one
// comparison with the next code's threshold settles it (the thresholds are
// further apart than an interval, the narrowest being 1/255/12.92). One
// test sends every v outside [0, 1) to the ends: the interval's index is
// out of the table for v >= 1, v <= -1/4096 and NaN (and 0 for v in
// (-1/4096, 0], whose code is 0 too).
func encode8(v float32) uint8 {
	i := int(v * encodeCells) // exact: a power of two
	if uint(i) >= encodeCells {
		if v > 0 {
			return 255
		}
		return 0
	}
	k := encodeTable[i]
	var up uint8
	if v >= encodeThreshold[k] { // a conditional move, not a branch: in a dark gradient it goes either way
		up = 1
	}
	return k + up
}

const encodeCells = 4096

var (
	// encodeThreshold[k] is the linear value from which code k+1 is nearest.
	encodeThreshold = func() (t [256]float32) {
		for k := range 255 {
			t[k] = float32(srgbToLinear((float64(k) + 0.5) / 255))
		}
		t[255] = float32(math.Inf(1))
		return t
	}()
	encodeTable = func() (t [encodeCells]uint8) {
		k := 0
		for i := range t {
			for float32(i)/encodeCells >= encodeThreshold[k] {
				k++
			}
			t[i] = uint8(k)
		}
		return t
	}()
)
