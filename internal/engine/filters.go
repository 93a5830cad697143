package engine

import "math"

// The source filters (deblock, denoise) work on premultiplied sRGB-encoded
// values: that is where a codec made its blocks and a sensor's noise is
// judged by eye, so their thresholds are in steps a viewer sees. Sharpening
// works on premultiplied linear light, after resampling.

// Deblocking thresholds in sRGB units (1 = full scale). A step across a
// block boundary smaller than deblockStep, between sides flatter than
// deblockFlat, is taken for a JPEG block edge; anything larger is an edge of
// the picture and left alone (the rule H.264's loop filter uses).
const (
	deblockStep = 0.12 // about 30 of 255
	deblockFlat = 0.04 // about 10 of 255
	jpegBlock   = 8
)

// deblock smooths the 8x8 block edges of JPEG compression in place: at each
// block boundary whose step qualifies, the step beyond the local slope is
// spread as a ramp over the four pixels on each side. amount in (0, 1]
// scales the correction; at 1 a flat-sided step becomes a straight ramp.
func deblock(run *runner, r *raster, amount float64, units float64) error {
	a := float32(amount)
	// Vertical boundaries: each row on its own.
	err := run.each(r.h, stripRows, units/2, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := r.row(y)
			for x := jpegBlock; x+1 < r.w; x += jpegBlock {
				deblockEdge(row, 4*x, 4, min(r.w-x, 4), a)
			}
		}
	})
	if err != nil {
		return err
	}
	// Horizontal boundaries: each touches four rows above and below it, so
	// boundaries are independent of each other.
	edges := (r.h - 2) / jpegBlock // boundaries at rows 8, 16, ... that have a second row below
	stride := 4 * r.w
	return run.each(max(edges, 0), 4, units/2, func(e0, e1 int) {
		for e := e0; e < e1; e++ {
			y := (e + 1) * jpegBlock
			for x := range r.w {
				deblockEdge(r.pix, y*stride+4*x, stride, min(r.h-y, 4), a)
			}
		}
	})
}

// deblockEdge filters one pixel line across a block boundary: q0 is the
// index of the first pixel after it, stride the distance between pixels
// along the line, nq (2..4) how many pixels exist from q0 on. There are
// always four before it.
func deblockEdge(pix []float32, q0, stride, nq int, amount float32) {
	var d [4]float32
	for c := range 4 {
		p1, p0 := pix[q0-2*stride+c], pix[q0-stride+c]
		q0v, q1 := pix[q0+c], pix[q0+stride+c]
		if abs32(q0v-p0) >= deblockStep || abs32(p1-p0) >= deblockFlat || abs32(q1-q0v) >= deblockFlat {
			return
		}
		slope := ((p0 - p1) + (q1 - q0v)) / 2
		d[c] = (q0v - p0 - slope) * amount
	}
	if d == [4]float32{} {
		return
	}
	// A step of d at the boundary less a ramp of d over 8 pixels: the
	// pixels at distances 0.5, 1.5, 2.5, 3.5 move by 7/16, 5/16, 3/16, 1/16.
	for i, f := range [4]float32{7.0 / 16, 5.0 / 16, 3.0 / 16, 1.0 / 16} {
		p := q0 - (i+1)*stride
		for c := range 4 {
			pix[p+c] += d[c] * f
		}
		clampPixel(pix[p : p+4])
		if i < nq {
			q := q0 + i*stride
			for c := range 4 {
				pix[q+c] -= d[c] * f
			}
			clampPixel(pix[q : q+4])
		}
	}
}

// clampPixel keeps a premultiplied pixel valid: alpha in [0, 1], colour in
// [0, alpha].
func clampPixel(p []float32) {
	a := min(max(p[3], 0), 1)
	p[0] = min(max(p[0], 0), a)
	p[1] = min(max(p[1], 0), a)
	p[2] = min(max(p[2], 0), a)
	p[3] = a
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }

// Denoising is a bilateral filter over a 5x5 neighbourhood: neighbours are
// averaged with weights that fall off with distance and with how much their
// brightness differs, so grain on a flat area is averaged away while an edge
// (a large brightness difference) keeps its sides apart.
const (
	denoiseRadius = 2
	denoiseSpace  = 1.5 // sigma of the spatial weight, in pixels
	// denoiseRange is the sigma of the brightness weight at amount 1, in
	// sRGB units: noise of a few levels is averaged, edges of 0.2 and more
	// get a weight under e^-2.
	denoiseRange = 0.1
	// rangeTable samples e^-t for t in [0, rangeLimit); beyond, the weight is 0.
	rangeLimit = 16
	rangeSteps = 64 // table entries per unit of t
)

// denoise returns the bilateral-filtered source; amount in (0, 1] sets how
// large a brightness difference still counts as noise.
func denoise(run *runner, src *raster, amount float64, units float64) (*raster, error) {
	w, h := src.w, src.h
	luma := make([]float32, w*h)
	err := run.each(h, stripRows, units/10, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := src.row(y)
			for x := range w {
				p := row[4*x : 4*x+4 : 4*x+4]
				luma[y*w+x] = 0.2126*p[0] + 0.7152*p[1] + 0.0722*p[2]
			}
		}
	})
	if err != nil {
		return nil, err
	}

	// A floor on sigma keeps the weights finite for a vanishing amount.
	sigma := max(denoiseRange*amount, 1e-3)
	invRange := float32(1 / (2 * sigma * sigma))
	var rangeTable [rangeLimit*rangeSteps + 1]float32 // +1: t just under the limit may round up
	for i := range rangeTable {
		rangeTable[i] = float32(math.Exp(-float64(i) / rangeSteps))
	}
	const side = 2*denoiseRadius + 1
	var space [side * side]float32
	for dy := -denoiseRadius; dy <= denoiseRadius; dy++ {
		for dx := -denoiseRadius; dx <= denoiseRadius; dx++ {
			space[(dy+denoiseRadius)*side+dx+denoiseRadius] =
				float32(math.Exp(-float64(dx*dx+dy*dy) / (2 * denoiseSpace * denoiseSpace)))
		}
	}
	// Neighbours past the edge are the edge pixel itself.
	var cols [side][]int
	for i := range cols {
		cols[i] = make([]int, w)
		for x := range w {
			cols[i][x] = min(max(x+i-denoiseRadius, 0), w-1)
		}
	}

	dst := newRaster(w, h)
	err = run.each(h, stripRows, units*9/10, func(y0, y1 int) {
		var rows [side]int
		for y := y0; y < y1; y++ {
			for i := range rows {
				rows[i] = min(max(y+i-denoiseRadius, 0), h-1)
			}
			out := dst.row(y)
			for x := range w {
				centre := luma[y*w+x]
				var r, g, b, a, sum float32
				for i, ny := range rows {
					srow := src.pix[4*ny*w : 4*(ny+1)*w]
					lrow := luma[ny*w : (ny+1)*w]
					sp := space[i*side : (i+1)*side]
					for j := range side {
						nx := cols[j][x]
						d := lrow[nx] - centre
						t := d * d * invRange
						if !(t < rangeLimit) {
							continue
						}
						wt := sp[j] * rangeTable[int(t*rangeSteps)]
						p := srow[4*nx : 4*nx+4 : 4*nx+4]
						r += wt * p[0]
						g += wt * p[1]
						b += wt * p[2]
						a += wt * p[3]
						sum += wt
					}
				}
				// The centre always counts (weight 1), so sum > 0.
				inv := 1 / sum
				setPixel(out[4*x:4*x+4], r*inv, g*inv, b*inv, a*inv)
			}
		}
	})
	return dst, err
}

// Unsharp masking: out = in + gain*(in - blur(in)), with a Gaussian blur.
// It steepens every edge and adds a slight overshoot on both sides, which is
// what makes it read as sharper. It works on luminance, adding the same
// change to R, G and B: colour edges get no coloured halos, and one channel
// is blurred instead of three.

// maxSharpenGain is the mask's gain at amount 1: 150%, a strong setting in
// photo editors; the default 0.5 is a moderate 75%.
const maxSharpenGain = 1.5

// maxSharpenSigma bounds the blur, and with it the rows a strip of output
// must see beyond itself.
const maxSharpenSigma = 4

// gaussian returns normalised weights for offsets -r..r.
func gaussian(sigma float64) []float32 {
	r := int(math.Ceil(3 * sigma))
	w := make([]float64, 2*r+1)
	var sum float64
	for i := range w {
		x := float64(i - r)
		w[i] = math.Exp(-x * x / (2 * sigma * sigma))
		sum += w[i]
	}
	out := make([]float32, len(w))
	for i := range w {
		out[i] = float32(w[i] / sum)
	}
	return out
}

// sharpenSigma is the blur radius for an image enlarged by scale: the
// softness an enlargement leaves grows with it, so does the mask.
func sharpenSigma(scale float64) float64 {
	return min(max(0.5*scale, 1), maxSharpenSigma)
}

// luminance is a linear premultiplied pixel's luminance (Rec. 709).
func luminance(p []float32) float32 { return 0.2126*p[0] + 0.7152*p[1] + 0.0722*p[2] }

// blurRow blurs the luminance of one row of pixels horizontally into dst
// (one value a pixel); luma is a scratch buffer of the same length.
func blurRow(dst, row, luma []float32, g []float32) {
	w := len(dst)
	for x := range w {
		luma[x] = luminance(row[4*x : 4*x+3])
	}
	r := len(g) / 2
	for x := range w {
		var sum float32
		if x >= r && x+r < w { // the interior needs no edge clamping
			for t, v := range luma[x-r : x+r+1] {
				sum += g[t] * v
			}
		} else {
			for t, wt := range g {
				sum += wt * luma[min(max(x+t-r, 0), w-1)]
			}
		}
		dst[x] = sum
	}
}

// sharpenRow applies the mask to row y (of h rows) in place: blurred(j)
// returns row j's luminance blurred horizontally, scratch is a buffer of
// one value a pixel.
func sharpenRow(row []float32, y, h int, g []float32, gain float32, blurred func(j int) []float32, scratch []float32) {
	r := len(g) / 2
	clear(scratch)
	for t, wt := range g {
		b := blurred(min(max(y+t-r, 0), h-1))[:len(scratch)]
		for i, v := range b {
			scratch[i] += wt * v
		}
	}
	for x, blur := range scratch {
		p := row[4*x : 4*x+4 : 4*x+4]
		d := gain * (luminance(p) - blur)
		p[0] += d
		p[1] += d
		p[2] += d
		clampPixel(p)
	}
}

// sharpen applies an unsharp mask to a whole raster (the upscaling pass).
func sharpen(run *runner, r *raster, sigma float64, gain float64, units float64) error {
	g := gaussian(sigma)
	blurred := make([]float32, r.w*r.h)
	blurredRow := func(y int) []float32 { return blurred[y*r.w : (y+1)*r.w] }
	err := run.rows(r.h, stripRows, units/2, func() func(int, int) {
		luma := make([]float32, r.w)
		return func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				blurRow(blurredRow(y), r.row(y), luma, g)
			}
		}
	})
	if err != nil {
		return err
	}
	return run.rows(r.h, stripRows, units/2, func() func(int, int) {
		scratch := make([]float32, r.w)
		return func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				// Row y reads only blurred rows and writes only itself.
				sharpenRow(r.row(y), y, r.h, g, float32(gain), blurredRow, scratch)
			}
		}
	})
}
