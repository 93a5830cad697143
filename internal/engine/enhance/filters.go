package enhance

import "math"

// The source filters (deblock, denoise) work on premultiplied sRGB-encoded
// values: that is where a codec made its blocks and a sensor's noise is
// judged by eye, so their thresholds are in steps a viewer sees. Sharpening
// works on premultiplied linear light, after resampling.
//
// Each filter is written for the streaming pipeline (pipeline.go): it
// computes one row from the rows around it, and its result does not depend
// on which rows were computed before, so any strip of the output comes out
// the same.

// Deblocking thresholds in sRGB units (1 = full scale). A step across a
// block boundary smaller than deblockStep, between sides flatter than
// deblockFlat, is taken for a JPEG block edge; anything larger is an edge of
// the picture and left alone (the rule H.264's loop filter uses).
const (
	deblockStep = 0.12 // about 30 of 255
	deblockFlat = 0.04 // about 10 of 255
	jpegBlock   = 8
)

// Deblocking smooths the 8x8 block edges of JPEG compression: at each block
// boundary whose step qualifies, the step beyond the local slope is spread
// as a ramp over the four pixels on each side. amount in (0, 1] scales the
// correction; at 1 a flat-sided step becomes a straight ramp. Vertical
// boundaries are filtered first, along each row; then horizontal ones, down
// each column. A pixel belongs to the boundary group of the nearest
// boundary: four pixels before it and four from it on.

// deblockGroup is the boundary whose group holds pixel i of an axis.
func deblockGroup(i int) int { return (i + jpegBlock/2) / jpegBlock * jpegBlock }

// isDeblockBoundary reports whether b, a multiple of 8, is a boundary of an
// axis of n pixels: one with a pixel before it and two after.
func isDeblockBoundary(b, n int) bool { return b >= jpegBlock && b+1 < n }

// deblockRow filters the vertical boundaries of one row in place. The row
// holds pixels [x0, x0+len(row)/4) of an image w wide, and whole boundary
// groups (or the image's own ends).
func deblockRow(row []float32, x0, w int, amount float32) {
	x1 := x0 + len(row)/4
	for b := deblockGroup(x0 + jpegBlock/2); b < x1; b += jpegBlock {
		if isDeblockBoundary(b, w) {
			deblockEdge(row, 4*(b-x0), 4, min(w-b, 4), amount)
		}
	}
}

// deblockStepAt is the correction across a horizontal boundary for each
// pixel of a row: p1, p0 the two rows before the boundary, q0, q1 the two
// from it. A pixel whose sides do not qualify gets zero.
func deblockStepAt(d, p1, p0, q0, q1 []float32, amount float32) {
	for i := 0; i+4 <= len(d); i += 4 {
		dd := d[i : i+4 : i+4]
		dd[0], dd[1], dd[2], dd[3] = 0, 0, 0, 0
		var v [4]float32
		ok := true
		for c := range 4 {
			a, b, e, f := p1[i+c], p0[i+c], q0[i+c], q1[i+c]
			if abs32(e-b) >= deblockStep || abs32(a-b) >= deblockFlat || abs32(f-e) >= deblockFlat {
				ok = false
				break
			}
			slope := ((b - a) + (f - e)) / 2
			v[c] = (e - b - slope) * amount
		}
		if ok {
			dd[0], dd[1], dd[2], dd[3] = v[0], v[1], v[2], v[3]
		}
	}
}

// deblockRamp is how much of the step moves each of the four pixels on
// either side of a boundary: a step of d less a ramp of d over 8 pixels
// moves the pixels at distances 0.5, 1.5, 2.5, 3.5 by 7/16, 5/16, 3/16, 1/16.
var deblockRamp = [4]float32{7.0 / 16, 5.0 / 16, 3.0 / 16, 1.0 / 16}

// deblockApply moves a row at distance index i (0..3) from a horizontal
// boundary by sign*d*ramp[i]: sign +1 before the boundary, -1 from it.
func deblockApply(row, d []float32, i int, sign float32) {
	f := sign * deblockRamp[i]
	for x := 0; x+4 <= len(row); x += 4 {
		dd := d[x : x+4 : x+4]
		if dd[0] == 0 && dd[1] == 0 && dd[2] == 0 && dd[3] == 0 {
			continue
		}
		p := row[x : x+4 : x+4]
		p[0] += dd[0] * f
		p[1] += dd[1] * f
		p[2] += dd[2] * f
		p[3] += dd[3] * f
		clampPixel(p)
	}
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
	for i, f := range deblockRamp {
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
	denoiseSide   = 2*denoiseRadius + 1
	denoiseSpace  = 1.5 // sigma of the spatial weight, in pixels
	// denoiseRange is the sigma of the brightness weight at amount 1, in
	// sRGB units: noise of a few levels is averaged, edges of 0.2 and more
	// get a weight under e^-2.
	denoiseRange = 0.1
	// rangeTable samples e^-t for t in [0, rangeLimit); beyond, the weight is 0.
	rangeLimit = 16
	rangeSteps = 64 // table entries per unit of t
)

// rangeTable: +1 because t just under the limit may round up. An array,
// not a pointer to one: the hot loops then index it with no load or nil
// check first.
var rangeTable = func() (t [rangeCells + 1]float32) {
	for i := range t {
		t[i] = float32(math.Exp(-float64(i) / rangeSteps))
	}
	return t
}()

// rangeCells is the range table's entries below the limit, a power of two.
const rangeCells = rangeLimit * rangeSteps

var denoiseSpaceWeights = func() (w [denoiseSide * denoiseSide]float32) {
	for dy := -denoiseRadius; dy <= denoiseRadius; dy++ {
		for dx := -denoiseRadius; dx <= denoiseRadius; dx++ {
			w[(dy+denoiseRadius)*denoiseSide+dx+denoiseRadius] =
				float32(math.Exp(-float64(dx*dx+dy*dy) / (2 * denoiseSpace * denoiseSpace)))
		}
	}
	return w
}()

// denoiseInvRange is 1/(2 sigma^2) of the brightness weight for amount in
// (0, 1]; a floor on sigma keeps the weights finite for a vanishing amount.
func denoiseInvRange(amount float64) float32 {
	sigma := max(denoiseRange*amount, 1e-3)
	return float32(1 / (2 * sigma * sigma))
}

// encodedLuma is the luminance of premultiplied sRGB-encoded pixels, the
// brightness the bilateral weights compare.
func encodedLuma(dst, row []float32) {
	for x := range dst {
		p := row[4*x : 4*x+3 : 4*x+3]
		dst[x] = 0.2126*p[0] + 0.7152*p[1] + 0.0722*p[2]
	}
}

// denoiseScale is what denoiseLuma multiplies luminance by for amount in
// (0, 1]: the square of a difference of two scaled values is then the
// range table's index, sqrt(rangeSteps/(2 sigma^2)), two multiplications
// less for each of a pixel's 25 neighbours.
func denoiseScale(amount float64) float32 {
	return float32(math.Sqrt(float64(denoiseInvRange(amount)) * rangeSteps))
}

// denoiseLuma is encodedLuma times scale (denoiseScale).
func denoiseLuma(dst, row []float32, scale float32) {
	for x := range dst {
		p := row[4*x : 4*x+3 : 4*x+3]
		dst[x] = scale * (0.2126*p[0] + 0.7152*p[1] + 0.0722*p[2])
	}
}

// denoiser filters rows (denoiseRow) with scratch space of its own.
type denoiser struct {
	// cols[j][x] is the index, in the rows the filter reads, of the
	// neighbour j-2 pixels from output pixel x (edge pixels repeated).
	cols *[denoiseSide][]int32
	// Output pixels [lo, hi) have their five neighbours side by side in
	// every row (all but a few at the image's left and right ends).
	lo, hi int
	opaque bool
	acc    []float32 // the weighted sums of [lo, hi): R, G, B, A a pixel
	sums   []float32 // and of their weights
}

func newDenoiser(cols *[denoiseSide][]int32, opaque bool) *denoiser {
	n := len(cols[0])
	lo, hi := 0, n
	for lo < n && cols[denoiseSide-1][lo] != cols[0][lo]+denoiseSide-1 {
		lo++
	}
	for hi > lo && cols[denoiseSide-1][hi-1] != cols[0][hi-1]+denoiseSide-1 {
		hi--
	}
	dn := &denoiser{cols: cols, lo: lo, hi: hi, opaque: opaque}
	if !opaque { // denoiseOpaque sums in registers
		dn.acc, dn.sums = make([]float32, 4*(hi-lo)), make([]float32, hi-lo)
	}
	return dn
}

// denoiseRow filters one row into dst: rows and lumas are the five rows
// around it (edge rows repeated past the image's ends) and their
// luminances, scaled (denoiseLuma). With opaque, every alpha is 1 and is
// not summed: the sum of the weights is the sum of the alphas it would
// have made.
//
// The pixels whose neighbours lie side by side are summed without the
// five rows' bounds checks at every pixel, in the order a pixel at a time
// would sum them, so the sums are the same: an opaque source's a pixel's
// 25 neighbours at once (denoiseOpaque), else a row of neighbours at a time
// for the whole row (denoiseNeighbours).
func (dn *denoiser) denoiseRow(dst []float32, rows, lumas *[denoiseSide][]float32) {
	for x := range dn.lo {
		dn.denoisePixel(dst, rows, lumas, x)
	}
	for x := dn.hi; x < len(dst)/4; x++ {
		dn.denoisePixel(dst, rows, lumas, x)
	}
	n := dn.hi - dn.lo
	if n <= 0 {
		return
	}
	first := int(dn.cols[0][dn.lo]) // of pixel lo; the next ones' follow
	centres := lumas[denoiseRadius][first+denoiseRadius : first+denoiseRadius+n]
	if dn.opaque {
		denoiseOpaque(dst[4*dn.lo:4*dn.hi], centres, rows, lumas, first)
		return
	}
	clear(dn.acc)
	clear(dn.sums)
	for i := range denoiseSide {
		sp := (*[denoiseSide]float32)(denoiseSpaceWeights[i*denoiseSide:])
		l := lumas[i][first : first+n+denoiseSide-1]
		px := rows[i][4*first : 4*(first+n+denoiseSide-1)]
		denoiseNeighbours(dn.acc, dn.sums, centres, l, px, sp)
	}
	out := dst[4*dn.lo : 4*dn.hi]
	for x, sum := range dn.sums {
		// The centre always counts (weight 1), so sum > 0.
		inv := 1 / sum
		p := (*[4]float32)(dn.acc[4*x:])
		setPixel(out[4*x:4*x+4], p[0]*inv, p[1]*inv, p[2]*inv, p[3]*inv)
	}
}

// denoiseOpaque is denoiseRow's pixels whose neighbours lie side by side,
// for an opaque source: a pixel's 25 neighbours at once (spelled out),
// summed in registers in the order denoiseNeighbours sums them a row at a
// time (the same sums), without storing and loading each pixel's sums
// between rows. centres are the pixels' luminances; their neighbours start
// at column first of rows and lumas.
func denoiseOpaque(out, centres []float32, rows, lumas *[denoiseSide][]float32, first int) {
	const side = denoiseSide
	end := first + len(centres) + side - 1
	l0, l1, l2, l3, l4 := lumas[0][first:end], lumas[1][first:end], lumas[2][first:end], lumas[3][first:end], lumas[4][first:end]
	p0, p1, p2, p3, p4 := rows[0][4*first:4*end], rows[1][4*first:4*end], rows[2][4*first:4*end], rows[3][4*first:4*end], rows[4][4*first:4*end]
	sp := &denoiseSpaceWeights
	out = out[:4*len(centres)]
	for x, centre := range centres {
		var r, g, b, sum float32
		lw, pw, sw := (*[side]float32)(l0[x:]), (*[4 * side]float32)(p0[4*x:]), (*[side]float32)(sp[0*side:])
		wt := bilateralWeight(lw[0]-centre, sw[0])
		r, g, b, sum = r+wt*pw[0], g+wt*pw[1], b+wt*pw[2], sum+wt
		wt = bilateralWeight(lw[1]-centre, sw[1])
		r, g, b, sum = r+wt*pw[4], g+wt*pw[5], b+wt*pw[6], sum+wt
		wt = bilateralWeight(lw[2]-centre, sw[2])
		r, g, b, sum = r+wt*pw[8], g+wt*pw[9], b+wt*pw[10], sum+wt
		wt = bilateralWeight(lw[3]-centre, sw[3])
		r, g, b, sum = r+wt*pw[12], g+wt*pw[13], b+wt*pw[14], sum+wt
		wt = bilateralWeight(lw[4]-centre, sw[4])
		r, g, b, sum = r+wt*pw[16], g+wt*pw[17], b+wt*pw[18], sum+wt
		lw, pw, sw = (*[side]float32)(l1[x:]), (*[4 * side]float32)(p1[4*x:]), (*[side]float32)(sp[1*side:])
		wt = bilateralWeight(lw[0]-centre, sw[0])
		r, g, b, sum = r+wt*pw[0], g+wt*pw[1], b+wt*pw[2], sum+wt
		wt = bilateralWeight(lw[1]-centre, sw[1])
		r, g, b, sum = r+wt*pw[4], g+wt*pw[5], b+wt*pw[6], sum+wt
		wt = bilateralWeight(lw[2]-centre, sw[2])
		r, g, b, sum = r+wt*pw[8], g+wt*pw[9], b+wt*pw[10], sum+wt
		wt = bilateralWeight(lw[3]-centre, sw[3])
		r, g, b, sum = r+wt*pw[12], g+wt*pw[13], b+wt*pw[14], sum+wt
		wt = bilateralWeight(lw[4]-centre, sw[4])
		r, g, b, sum = r+wt*pw[16], g+wt*pw[17], b+wt*pw[18], sum+wt
		lw, pw, sw = (*[side]float32)(l2[x:]), (*[4 * side]float32)(p2[4*x:]), (*[side]float32)(sp[2*side:])
		wt = bilateralWeight(lw[0]-centre, sw[0])
		r, g, b, sum = r+wt*pw[0], g+wt*pw[1], b+wt*pw[2], sum+wt
		wt = bilateralWeight(lw[1]-centre, sw[1])
		r, g, b, sum = r+wt*pw[4], g+wt*pw[5], b+wt*pw[6], sum+wt
		wt = bilateralWeight(lw[2]-centre, sw[2])
		r, g, b, sum = r+wt*pw[8], g+wt*pw[9], b+wt*pw[10], sum+wt
		wt = bilateralWeight(lw[3]-centre, sw[3])
		r, g, b, sum = r+wt*pw[12], g+wt*pw[13], b+wt*pw[14], sum+wt
		wt = bilateralWeight(lw[4]-centre, sw[4])
		r, g, b, sum = r+wt*pw[16], g+wt*pw[17], b+wt*pw[18], sum+wt
		lw, pw, sw = (*[side]float32)(l3[x:]), (*[4 * side]float32)(p3[4*x:]), (*[side]float32)(sp[3*side:])
		wt = bilateralWeight(lw[0]-centre, sw[0])
		r, g, b, sum = r+wt*pw[0], g+wt*pw[1], b+wt*pw[2], sum+wt
		wt = bilateralWeight(lw[1]-centre, sw[1])
		r, g, b, sum = r+wt*pw[4], g+wt*pw[5], b+wt*pw[6], sum+wt
		wt = bilateralWeight(lw[2]-centre, sw[2])
		r, g, b, sum = r+wt*pw[8], g+wt*pw[9], b+wt*pw[10], sum+wt
		wt = bilateralWeight(lw[3]-centre, sw[3])
		r, g, b, sum = r+wt*pw[12], g+wt*pw[13], b+wt*pw[14], sum+wt
		wt = bilateralWeight(lw[4]-centre, sw[4])
		r, g, b, sum = r+wt*pw[16], g+wt*pw[17], b+wt*pw[18], sum+wt
		lw, pw, sw = (*[side]float32)(l4[x:]), (*[4 * side]float32)(p4[4*x:]), (*[side]float32)(sp[4*side:])
		wt = bilateralWeight(lw[0]-centre, sw[0])
		r, g, b, sum = r+wt*pw[0], g+wt*pw[1], b+wt*pw[2], sum+wt
		wt = bilateralWeight(lw[1]-centre, sw[1])
		r, g, b, sum = r+wt*pw[4], g+wt*pw[5], b+wt*pw[6], sum+wt
		wt = bilateralWeight(lw[2]-centre, sw[2])
		r, g, b, sum = r+wt*pw[8], g+wt*pw[9], b+wt*pw[10], sum+wt
		wt = bilateralWeight(lw[3]-centre, sw[3])
		r, g, b, sum = r+wt*pw[12], g+wt*pw[13], b+wt*pw[14], sum+wt
		wt = bilateralWeight(lw[4]-centre, sw[4])
		r, g, b, sum = r+wt*pw[16], g+wt*pw[17], b+wt*pw[18], sum+wt
		inv := 1 / sum                                               // the centre always counts (weight 1), so sum > 0
		setPixel(out[4*x:4*x+4:4*x+4], r*inv, g*inv, b*inv, sum*inv) // the alphas summed would be the weights' sum
	}
}

// denoiseNeighbours adds, for each pixel x of a row, the weighted values
// of its five neighbours in one row, alpha too: luminances l[x .. x+4],
// pixels px[4x .. 4x+19], spatial weights sp; centres[x] is the pixel's
// own luminance. A neighbour whose weight is 0 adds 0 (the sums of
// non-negative values are unchanged by it).
func denoiseNeighbours(acc, sums, centres, l, px []float32, sp *[denoiseSide]float32) {
	for x, centre := range centres {
		if len(l) < denoiseSide || len(px) < 4*denoiseSide || len(acc) < 4 || x >= len(sums) {
			return
		}
		lw, pw, a := (*[denoiseSide]float32)(l), (*[4 * denoiseSide]float32)(px), (*[4]float32)(acc)
		l, px, acc = l[1:], px[4:], acc[4:]
		r, g, b, al, sum := a[0], a[1], a[2], a[3], sums[x]
		for j := range denoiseSide {
			wt := bilateralWeight(lw[j]-centre, sp[j])
			p := (*[4]float32)(pw[4*j:])
			r, g, b, al, sum = r+wt*p[0], g+wt*p[1], b+wt*p[2], al+wt*p[3], sum+wt
		}
		a[0], a[1], a[2], a[3], sums[x] = r, g, b, al, sum
	}
}

// bilateralWeight is the weight of a neighbour whose scaled luminance
// (denoiseLuma) differs from the pixel's by d, sp its spatial weight.
func bilateralWeight(d, sp float32) float32 {
	t := d * d
	if !(t < rangeCells) {
		return 0
	}
	return sp * rangeTable[int(t)&(rangeCells-1)] // the mask changes nothing: it drops the bounds check
}

// denoisePixel is pixel x of denoiseRow, whatever its neighbours' columns.
func (dn *denoiser) denoisePixel(dst []float32, rows, lumas *[denoiseSide][]float32, x int) {
	const cells = rangeCells
	cols := dn.cols
	var r, g, b, a, sum float32
	centre := lumas[denoiseRadius][cols[denoiseRadius][x]]
	for i := range denoiseSide {
		srow, lrow := rows[i], lumas[i]
		sp := denoiseSpaceWeights[i*denoiseSide : (i+1)*denoiseSide : (i+1)*denoiseSide]
		for j := range denoiseSide {
			nx := cols[j][x]
			d := lrow[nx] - centre
			t := d * d
			if !(t < cells) {
				continue
			}
			wt := sp[j] * rangeTable[int(t)]
			p := srow[4*nx : 4*nx+4 : 4*nx+4]
			r += wt * p[0]
			g += wt * p[1]
			b += wt * p[2]
			if !dn.opaque {
				a += wt * p[3]
			}
			sum += wt
		}
	}
	if dn.opaque {
		a = sum
	}
	// The centre always counts (weight 1), so sum > 0.
	inv := 1 / sum
	setPixel(dst[4*x:4*x+4], r*inv, g*inv, b*inv, a*inv)
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

// lumaRow sets dst to the luminance of a row of linear premultiplied pixels.
func lumaRow(dst, row []float32) {
	for x := range dst {
		dst[x] = luminance(row[4*x : 4*x+3 : 4*x+3])
	}
}

// blurRow blurs the luminance of one row of pixels horizontally into dst
// (one value a pixel); luma is a scratch buffer of the same length. The
// weights are symmetric, so each pair of neighbours is added before it is
// weighed.
func blurRow(dst, row, luma []float32, g []float32) {
	w := len(dst)
	for x := range w {
		luma[x] = luminance(row[4*x : 4*x+3 : 4*x+3])
	}
	r := len(g) / 2
	side := g[r:] // side[k] weighs the neighbours k away
	for x := range w {
		if x >= r && x+r < w { // the interior needs no edge clamping
			around := luma[x-r : x+r+1 : x+r+1]
			sum := side[0] * around[r]
			for k := 1; k < len(side); k++ {
				sum += side[k] * (around[r-k] + around[r+k])
			}
			dst[x] = sum
			continue
		}
		var sum float32
		for t, wt := range g {
			sum += wt * luma[min(max(x+t-r, 0), w-1)]
		}
		dst[x] = sum
	}
}

// blurColumns sets dst to the vertical blur of rows, the 2r+1 rows around
// one (edge rows repeated), with the symmetric weights g.
func blurColumns(dst []float32, rows [][]float32, g []float32) {
	r := len(g) / 2
	scaleInto(dst, rows[r], g[r])
	for k := 1; k <= r; k++ {
		addPairScaled(dst, rows[r-k], rows[r+k], g[r+k])
	}
}

// addPairScaled adds w*(a+b) to dst.
func addPairScaled(dst, a, b []float32, w float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] += w * (a[i] + b[i])
	}
}

// sharpenApply adds gain times the difference between each pixel's
// luminance and its blurred luminance to the pixel's colour. With clamp,
// the pixels are made valid again; without, whoever reads them next must
// clamp (the 8-bit conversion does, to the same effect).
func sharpenApply(row, blurred []float32, gain float32, clamp bool) {
	for x, blur := range blurred {
		p := row[4*x : 4*x+4 : 4*x+4]
		d := gain * (luminance(p) - blur)
		p[0] += d
		p[1] += d
		p[2] += d
		if clamp {
			clampPixel(p)
		}
	}
}
