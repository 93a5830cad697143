package generate

import (
	"context"
	"image"
	"image/draw"
	"math"
)

// genWindow maps frame pixels onto a canvas: frame pixel (x, y) shows canvas
// point (x0 + (x+0.5)*sx, y0 + (y+0.5)*sy).
type genWindow struct{ x0, y0, sx, sy float64 }

// genSample fills dst with src seen through win, bilinearly interpolated in
// 8-bit fixed point: each row first blends the two source rows it falls
// between, then interpolates along that blend. src must be at least 2 x 2
// and start at (0, 0).
func genSample(dst, src *image.RGBA, win genWindow) {
	w, h := dst.Rect.Dx(), dst.Rect.Dy()
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	// Every row uses the same columns and weights.
	xs := make([]int32, w)
	wx := make([]uint32, w)
	for x := range w {
		xs[x], wx[x] = genTap(win.x0+(float64(x)+0.5)*win.sx-0.5, sw)
	}
	lo, hi := int(xs[0]), int(xs[w-1])+2
	mixed := make([]uint32, 4*(hi-lo)) // 16-bit fixed point, RGB_
	for y := range h {
		iy, wy := genTap(win.y0+(float64(y)+0.5)*win.sy-0.5, sh)
		top := src.Pix[int(iy)*src.Stride+4*lo : int(iy)*src.Stride+4*hi]
		bot := src.Pix[int(iy+1)*src.Stride+4*lo : int(iy+1)*src.Stride+4*hi]
		bot = bot[:len(top)]
		for i := range top {
			mixed[i] = uint32(top[i])*(256-wy) + uint32(bot[i])*wy
		}
		d := dst.Pix[y*dst.Stride : y*dst.Stride+4*w]
		for x := range w {
			i := 4 * (int(xs[x]) - lo)
			fx := wx[x]
			m := mixed[i : i+7]
			d[4*x] = uint8((m[0]*(256-fx) + m[4]*fx + 1<<15) >> 16)
			d[4*x+1] = uint8((m[1]*(256-fx) + m[5]*fx + 1<<15) >> 16)
			d[4*x+2] = uint8((m[2]*(256-fx) + m[6]*fx + 1<<15) >> 16)
			d[4*x+3] = 0xff
		}
	}
}

// genTap is the left (top) sample of a bilinear tap at position v on an
// axis of n samples, and the right one's weight out of 256; the edges clamp.
func genTap(v float64, n int) (int32, uint32) {
	if v <= 0 {
		return 0, 0
	}
	if v >= float64(n-1) {
		return int32(n - 2), 256
	}
	i := math.Floor(v)
	return int32(i), uint32((v-i)*256 + 0.5)
}

// genBlend mixes src into dst, weight a out of 256.
func genBlend(dst, src *image.RGBA, a int) {
	for i := range dst.Pix {
		dst.Pix[i] = uint8((int(dst.Pix[i])*(256-a) + int(src.Pix[i])*a + 128) >> 8)
	}
}

// CoverFit scales src to cover w x h and crops the overflow equally on
// both sides. Large sources are first reduced by averaging whole k x k
// blocks, row band by row band, so memory stays a few rows of the source
// and no detail aliases; bilinear interpolation does the rest (a factor
// under 2). It stops when ctx ends.
func CoverFit(ctx context.Context, src image.Image, w, h int) (*image.RGBA, error) {
	b := src.Bounds()
	cw, ch := b.Dx(), b.Dy()
	if cw*h > ch*w {
		cw = max(ch*w/h, 1)
	} else {
		ch = max(cw*h/w, 1)
	}
	crop := image.Rect(0, 0, cw, ch).Add(b.Min).Add(image.Pt((b.Dx()-cw)/2, (b.Dy()-ch)/2))
	k := max(min(cw/w, ch/h), 1)
	// At least 2 x 2 for the bilinear taps.
	rw, rh := max(cw/k, 2), max(ch/k, 2)
	reduced := image.NewRGBA(image.Rect(0, 0, rw, rh))
	band := image.NewRGBA(image.Rect(0, 0, cw, k))
	sums := make([]uint32, 3*rw)
	for ry := range rh {
		if ry%32 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		// image/draw converts the source's model (YCbCr, NRGBA, Gray...)
		// to RGBA on its fast paths; a source of 1 pixel is repeated.
		sy := crop.Min.Y + min(ry*k, ch-1)
		draw.Draw(band, band.Rect, src, image.Pt(crop.Min.X, sy), draw.Src)
		clear(sums)
		rows := min(k, crop.Max.Y-sy)
		for y := range rows {
			row := band.Pix[y*band.Stride:]
			for rx := range rw {
				for x := min(rx*k, cw-1); x < min(rx*k+k, cw); x++ {
					sums[3*rx] += uint32(row[4*x])
					sums[3*rx+1] += uint32(row[4*x+1])
					sums[3*rx+2] += uint32(row[4*x+2])
				}
			}
		}
		d := reduced.Pix[ry*reduced.Stride:]
		for rx := range rw {
			n := uint32(rows * (min(rx*k+k, cw) - min(rx*k, cw-1)))
			d[4*rx] = uint8((sums[3*rx] + n/2) / n)
			d[4*rx+1] = uint8((sums[3*rx+1] + n/2) / n)
			d[4*rx+2] = uint8((sums[3*rx+2] + n/2) / n)
			d[4*rx+3] = 0xff
		}
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	genSample(out, reduced, genWindow{sx: float64(rw) / float64(w), sy: float64(rh) / float64(h)})
	return out, nil
}
