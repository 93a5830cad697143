package generate

import (
	"image"
	"image/color"
	"slices"
)

// genQuantizer maps colours onto one palette of up to 256 entries chosen
// for the video's own colours (median cut), through a table over 5-bit
// channels: as fast as a fixed colour cube, without its posterised look.
// No dithering: a dither pattern triples the GIF's size and shimmers as
// the camera moves.
type genQuantizer struct {
	pal color.Palette
	lut []uint8 // index of the nearest entry, by r>>3<<10 | g>>3<<5 | b>>3
}

// newGenQuantizer builds the palette from samples (RGBA pixels).
func newGenQuantizer(samples []byte) *genQuantizer {
	pal := genMedianCut(samples, 256)
	q := &genQuantizer{pal: pal, lut: make([]uint8, 1<<15)}
	for k := range q.lut {
		r, g, b := (k>>10)<<3|4, (k>>5&31)<<3|4, (k&31)<<3|4
		best, bestD := 0, 1<<30
		for i, c := range pal {
			c := c.(color.RGBA)
			dr, dg, db := r-int(c.R), g-int(c.G), b-int(c.B)
			// Weighted like the eye: green most, blue least.
			if d := 3*dr*dr + 4*dg*dg + 2*db*db; d < bestD {
				best, bestD = i, d
			}
		}
		q.lut[k] = uint8(best)
	}
	return q
}

// quantize maps src onto q's palette in dst, of the same size.
func (q *genQuantizer) quantize(dst *image.Paletted, src *image.RGBA) {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	for y := range h {
		s := src.Pix[y*src.Stride : y*src.Stride+4*w]
		d := dst.Pix[y*dst.Stride : y*dst.Stride+w]
		for x := range d {
			p := s[4*x : 4*x+3]
			d[x] = q.lut[int(p[0]>>3)<<10|int(p[1]>>3)<<5|int(p[2]>>3)]
		}
	}
}

// genMedianCut splits the colour box of samples (RGBA pixels) along its
// longest side at the median until there are n boxes, always splitting the
// box that spans most (weighted by how many samples it holds), and returns
// each box's mean colour. Deterministic: the same samples give the same
// palette.
func genMedianCut(samples []byte, n int) color.Palette {
	type box struct {
		px    [][3]uint8
		axis  int
		span  int
		score float64
	}
	measure := func(b *box) {
		lo, hi := [3]int{255, 255, 255}, [3]int{}
		for _, p := range b.px {
			for c := range 3 {
				lo[c], hi[c] = min(lo[c], int(p[c])), max(hi[c], int(p[c]))
			}
		}
		b.axis, b.span = 0, -1
		for c := range 3 {
			if hi[c]-lo[c] > b.span {
				b.axis, b.span = c, hi[c]-lo[c]
			}
		}
		b.score = float64(b.span) * float64(len(b.px))
	}
	all := make([][3]uint8, 0, len(samples)/4)
	for i := 0; i+3 < len(samples); i += 4 {
		all = append(all, [3]uint8{samples[i], samples[i+1], samples[i+2]})
	}
	if len(all) == 0 {
		return color.Palette{color.RGBA{0, 0, 0, 0xff}}
	}
	boxes := []*box{{px: all}}
	measure(boxes[0])
	for len(boxes) < n {
		best := -1
		for i, b := range boxes {
			if b.span > 0 && (best < 0 || b.score > boxes[best].score) {
				best = i
			}
		}
		if best < 0 {
			break // every box is one colour
		}
		b := boxes[best]
		axis := b.axis
		slices.SortFunc(b.px, func(p, q [3]uint8) int {
			if d := int(p[axis]) - int(q[axis]); d != 0 {
				return d
			}
			return int(p[0])<<16 | int(p[1])<<8 | int(p[2]) - (int(q[0])<<16 | int(q[1])<<8 | int(q[2]))
		})
		// Split at the median, moved off a run of equal values so both
		// halves are non-empty and differ on the axis.
		mid := len(b.px) / 2
		for mid > 0 && b.px[mid-1][axis] == b.px[mid][axis] {
			mid--
		}
		if mid == 0 {
			mid = len(b.px) / 2
			for mid < len(b.px) && b.px[mid-1][axis] == b.px[mid][axis] {
				mid++
			}
		}
		lo, hi := &box{px: b.px[:mid]}, &box{px: b.px[mid:]}
		measure(lo)
		measure(hi)
		boxes[best] = lo
		boxes = append(boxes, hi)
	}
	pal := make(color.Palette, len(boxes))
	for i, b := range boxes {
		var sum [3]int
		for _, p := range b.px {
			for c := range 3 {
				sum[c] += int(p[c])
			}
		}
		k := len(b.px)
		pal[i] = color.RGBA{uint8((sum[0] + k/2) / k), uint8((sum[1] + k/2) / k), uint8((sum[2] + k/2) / k), 0xff}
	}
	return pal
}
