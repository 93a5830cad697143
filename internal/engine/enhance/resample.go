package enhance

import "math"

// lanczosLobes is the kernel's radius in source pixels at scale 1: three
// lobes keep edges crisp with little ringing, the usual choice for photos.
const lanczosLobes = 3

func lanczos(x float64) float64 {
	x = math.Abs(x)
	switch {
	case x == 0:
		return 1
	case x >= lanczosLobes:
		return 0
	}
	px := math.Pi * x
	return lanczosLobes * math.Sin(px) * math.Sin(px/lanczosLobes) / (px * px)
}

// window is the part of a source axis that maps onto an output axis: from
// offset, length source pixels, both possibly fractional.
type window struct {
	offset, length float64
}

// kernel holds the taps of one axis of a resample: output i reads source
// pixels start[i] .. start[i]+count[i]-1 with weights
// weights[i*taps : i*taps+count[i]].
type kernel struct {
	taps    int
	start   []int
	count   []int
	weights []float32
	most    int // the largest count
	// six is, for a horizontal enlarging kernel (taps == enlargeTaps,
	// most <= 6, set by shifted), each output's start and six weights
	// side by side: the spelled-out loops then keep one slice live
	// instead of two. nine and ten are the same for a kernel of nine or
	// ten taps (the mask's blur fused with an enlargement, resampleLuma).
	six  []tap6
	nine []tap9
	ten  []tap10
}

// tap6, tap9 and tap10 are one output of a kernel: its first source
// pixel and its weights (0 past count).
type tap6 struct {
	start int
	w     [6]float32
}

type tap9 struct {
	start int
	w     [9]float32
}

type tap10 struct {
	start int
	w     [10]float32
}

// withLumaTaps sets k.nine or k.ten for a kernel of nine or ten taps.
func (k *kernel) withLumaTaps() {
	switch k.taps {
	case 9:
		k.nine = make([]tap9, len(k.start))
		for x, start := range k.start {
			k.nine[x].start = start
			copy(k.nine[x].w[:], k.weights[9*x:9*x+9])
		}
	case 10:
		k.ten = make([]tap10, len(k.start))
		for x, start := range k.start {
			k.ten[x].start = start
			copy(k.ten[x].w[:], k.weights[10*x:10*x+10])
		}
	}
}

// withSix sets k.six when k is an enlarging kernel, and returns k.
func (k *kernel) withSix() *kernel {
	k.six = nil
	if k.taps != enlargeTaps || k.most > 6 {
		return k
	}
	k.six = make([]tap6, len(k.start))
	for x, start := range k.start {
		k.six[x].start = start
		copy(k.six[x].w[:], k.weights[x*enlargeTaps:x*enlargeTaps+6])
	}
	return k
}

// newKernel maps outN output pixels onto win of a source axis of srcN
// pixels. Pixel centres line up (output i sits at source
// offset+(i+0.5)*length/outN-0.5). Downscaling widens the kernel by the
// ratio so every source pixel counts (no aliasing). Taps outside the source
// fold onto its edge pixel, as if the edge extended for ever, and the
// weights of each output sum to exactly one, so a flat image stays flat up
// to its edges.
func newKernel(srcN, outN int, win window) *kernel {
	step := win.length / float64(outN) // source pixels per output pixel
	stretch := math.Max(step, 1)
	radius := lanczosLobes * stretch
	taps := int(math.Ceil(2*radius)) + 1
	k := &kernel{
		taps:    taps,
		start:   make([]int, outN),
		count:   make([]int, outN),
		weights: make([]float32, outN*taps),
	}
	acc := make([]float64, taps)
	for i := range outN {
		centre := win.offset + (float64(i)+0.5)*step - 0.5
		lo := int(math.Floor(centre-radius)) + 1
		hi := int(math.Floor(centre + radius))
		first := min(max(lo, 0), srcN-1)
		last := min(max(hi, 0), srcN-1)
		clear(acc)
		var sum float64
		for j := lo; j <= hi; j++ {
			w := lanczos((float64(j) - centre) / stretch)
			acc[min(max(j, 0), srcN-1)-first] += w
			sum += w
		}
		k.start[i] = first
		k.count[i] = last - first + 1
		for t := range k.count[i] {
			k.weights[i*taps+t] = float32(acc[t] / sum)
		}
		k.most = max(k.most, k.count[i])
	}
	return k
}

// resampleRow resamples one row of pixels horizontally into dst.
func (k *kernel) resampleRow(dst, src []float32) {
	k.resampleRowOf(dst, src, false)
}

// resampleRowOf is resampleRow; with opaque, the row's pixels are all
// opaque, and the spelled-out loop sets each output's alpha to 1 instead
// of summing it (resampleRow6Opaque).
func (k *kernel) resampleRowOf(dst, src []float32, opaque bool) {
	x := 0
	switch {
	case k.taps != enlargeTaps || k.most > 6:
	case opaque:
		x = k.resampleRow6Opaque(dst, src)
	default:
		x = k.resampleRow6(dst, src)
	}
	for ; x < len(k.start); x++ {
		k.resamplePixel(dst, src, x)
	}
}

// enlargeTaps is the taps of an enlarging kernel: Lanczos-3 reads six
// source pixels around every point between two of them.
const enlargeTaps = 2*lanczosLobes + 1

// resampleRow6 is resampleRow for an enlarging kernel that reads at most
// six pixels an output (floor(c+3)-floor(c-3), the count of every one but
// for a rounding), its six taps spelled out: the sums are the loop's, in the
// same order, so the results are the same, without the loop's bookkeeping
// and bounds checks. It stops before the first output whose six pixels
// would run past src's end (past count, at an edge folded onto fewer
// pixels, the weights are 0), and returns that output's index.
func (k *kernel) resampleRow6(dst, src []float32) int {
	six := k.six[:k.fullEnd6(len(src))]
	dst = dst[:4*len(six)]
	for x := range six {
		t := &six[x]
		w := &t.w
		s := (*[24]float32)(src[4*t.start:])
		d := (*[4]float32)(dst[4*x:])
		d[0] = w[0]*s[0] + w[1]*s[4] + w[2]*s[8] + w[3]*s[12] + w[4]*s[16] + w[5]*s[20]
		d[1] = w[0]*s[1] + w[1]*s[5] + w[2]*s[9] + w[3]*s[13] + w[4]*s[17] + w[5]*s[21]
		d[2] = w[0]*s[2] + w[1]*s[6] + w[2]*s[10] + w[3]*s[14] + w[4]*s[18] + w[5]*s[22]
		d[3] = w[0]*s[3] + w[1]*s[7] + w[2]*s[11] + w[3]*s[15] + w[4]*s[19] + w[5]*s[23]
	}
	return len(six)
}

// fullEnd6 is the first output whose six source pixels would run past a
// row of n float32s (start grows with the output index).
func (k *kernel) fullEnd6(n int) int {
	end := len(k.six)
	for end > 0 && 4*k.six[end-1].start+24 > n {
		end--
	}
	return end
}

// resampleRow6Opaque is resampleRow6 for a row of opaque pixels (alphas
// of 1, to within float32's rounding): the alpha it would sum is 1 to
// within a few ulps (six weights summing to 1 times alphas of 1), which
// every reader of the output's rows takes for 1 (opaque, to8), so it sets
// 1 and spends a quarter less.
func (k *kernel) resampleRow6Opaque(dst, src []float32) int {
	six := k.six[:k.fullEnd6(len(src))]
	dst = dst[:4*len(six)]
	// Two outputs an iteration, the second's pixels found from the
	// first's: an enlargement's outputs start at most one pixel apart, and
	// the checks of where they read are then made once for both.
	x := 0
	for ; x+1 < len(six); x += 2 {
		t, u := &six[x], &six[x+1]
		off := 4 * (u.start - t.start)
		row := src[4*t.start:]
		if uint(off) > 4 || len(row) < off+24 {
			break
		}
		s, s2 := (*[24]float32)(row), (*[24]float32)(row[off:])
		d := (*[8]float32)(dst[4*x:])
		w := &t.w
		d[0] = w[0]*s[0] + w[1]*s[4] + w[2]*s[8] + w[3]*s[12] + w[4]*s[16] + w[5]*s[20]
		d[1] = w[0]*s[1] + w[1]*s[5] + w[2]*s[9] + w[3]*s[13] + w[4]*s[17] + w[5]*s[21]
		d[2] = w[0]*s[2] + w[1]*s[6] + w[2]*s[10] + w[3]*s[14] + w[4]*s[18] + w[5]*s[22]
		d[3] = 1
		w = &u.w
		d[4] = w[0]*s2[0] + w[1]*s2[4] + w[2]*s2[8] + w[3]*s2[12] + w[4]*s2[16] + w[5]*s2[20]
		d[5] = w[0]*s2[1] + w[1]*s2[5] + w[2]*s2[9] + w[3]*s2[13] + w[4]*s2[17] + w[5]*s2[21]
		d[6] = w[0]*s2[2] + w[1]*s2[6] + w[2]*s2[10] + w[3]*s2[14] + w[4]*s2[18] + w[5]*s2[22]
		d[7] = 1
	}
	for ; x < len(six); x++ {
		t := &six[x]
		w := &t.w
		s := (*[24]float32)(src[4*t.start:])
		d := (*[4]float32)(dst[4*x:])
		d[0] = w[0]*s[0] + w[1]*s[4] + w[2]*s[8] + w[3]*s[12] + w[4]*s[16] + w[5]*s[20]
		d[1] = w[0]*s[1] + w[1]*s[5] + w[2]*s[9] + w[3]*s[13] + w[4]*s[17] + w[5]*s[21]
		d[2] = w[0]*s[2] + w[1]*s[6] + w[2]*s[10] + w[3]*s[14] + w[4]*s[18] + w[5]*s[22]
		d[3] = 1
	}
	return len(six)
}

// resamplePixel is output pixel x of resampleRow.
func (k *kernel) resamplePixel(dst, src []float32, x int) {
	w := k.weights[x*k.taps : x*k.taps+k.count[x]]
	s := src[4*k.start[x] : 4*(k.start[x]+len(w))]
	var r, g, b, a float32
	for t, wt := range w {
		p := s[4*t : 4*t+4 : 4*t+4]
		r += wt * p[0]
		g += wt * p[1]
		b += wt * p[2]
		a += wt * p[3]
	}
	d := dst[4*x : 4*x+4 : 4*x+4]
	d[0], d[1], d[2], d[3] = r, g, b, a
}

// resampleLuma resamples one row of single values (luminance) into dst.
// The even and the odd taps are summed apart: one chain of dependent
// additions would leave the core waiting on each.
func (k *kernel) resampleLuma(dst, src []float32) {
	x := 0
	switch k.taps {
	case 9:
		x = k.resampleLuma9(dst, src)
	case 10:
		x = k.resampleLuma10(dst, src)
	}
	for ; x < len(k.start); x++ {
		k.resampleLumaPixel(dst, src, x)
	}
}

// resampleLumaPixel is output x of resampleLuma.
func (k *kernel) resampleLumaPixel(dst, src []float32, x int) {
	w := k.weights[x*k.taps : x*k.taps+k.count[x]]
	s := src[k.start[x] : k.start[x]+len(w)]
	s = s[:len(w)]
	var even, odd float32
	t := 0
	for ; t+1 < len(w); t += 2 {
		even += w[t] * s[t]
		odd += w[t+1] * s[t+1]
	}
	if t < len(w) {
		even += w[t] * s[t]
	}
	dst[x] = even + odd
}

// fullEnd is the first output whose taps pixels from its start would run
// past a source of n pixels: the outputs before it can read all taps (past
// count, at an edge folded onto fewer pixels, the weights are 0).
func (k *kernel) fullEnd(n int) int {
	end := len(k.start)
	for end > 0 && k.start[end-1]+k.taps > n { // start grows with the output index
		end--
	}
	return end
}

// resampleLuma9 is resampleLuma for a kernel of nine taps (the mask's blur
// fused with a 2x to 5x enlargement), spelled out: the same sums in the same
// order, without the loop's bookkeeping and bounds checks. It stops at
// fullEnd and returns it.
func (k *kernel) resampleLuma9(dst, src []float32) int {
	taps := k.nine[:k.fullEnd(len(src))]
	dst = dst[:len(taps)]
	for x := range taps {
		t := &taps[x]
		w := &t.w
		s := (*[9]float32)(src[t.start:])
		even := w[0]*s[0] + w[2]*s[2] + w[4]*s[4] + w[6]*s[6] + w[8]*s[8]
		odd := w[1]*s[1] + w[3]*s[3] + w[5]*s[5] + w[7]*s[7]
		dst[x] = even + odd
	}
	return len(taps)
}

// resampleLuma10 is resampleLuma9 for ten taps (5x to 8x).
func (k *kernel) resampleLuma10(dst, src []float32) int {
	taps := k.ten[:k.fullEnd(len(src))]
	dst = dst[:len(taps)]
	for x := range taps {
		t := &taps[x]
		w := &t.w
		s := (*[10]float32)(src[t.start:])
		even := w[0]*s[0] + w[2]*s[2] + w[4]*s[4] + w[6]*s[6] + w[8]*s[8]
		odd := w[1]*s[1] + w[3]*s[3] + w[5]*s[5] + w[7]*s[7] + w[9]*s[9]
		dst[x] = even + odd
	}
	return len(taps)
}

// blurred is k followed by a blur of its outputs with the symmetric weights
// g (outputs past either end repeat the end one): one kernel from k's source
// straight to the blurred outputs, so that a blur of a resample costs one
// pass over the source's pixels instead of two over the output's.
func (k *kernel) blurred(g []float32) *kernel {
	n, r := len(k.start), len(g)/2
	at := func(i int) int { return min(max(i, 0), n-1) }
	b := &kernel{start: make([]int, n), count: make([]int, n)}
	for i := range n {
		last := at(i + r) // start and start+count both grow with the output index
		b.start[i] = k.start[at(i-r)]
		b.count[i] = k.start[last] + k.count[last] - b.start[i]
		b.taps = max(b.taps, b.count[i])
	}
	b.most = b.taps
	b.weights = make([]float32, n*b.taps)
	acc := make([]float64, b.taps)
	for i := range n {
		clear(acc)
		for t, gt := range g {
			j := at(i + t - r)
			off := k.start[j] - b.start[i]
			for u, w := range k.weights[j*k.taps : j*k.taps+k.count[j]] {
				acc[off+u] += float64(gt) * float64(w)
			}
		}
		for u := range b.count[i] {
			b.weights[i*b.taps+u] = float32(acc[u])
		}
	}
	return b
}

// combine computes row y of a vertical resample into dst; row(j) returns
// row j of the source, in increasing j. The rows are summed a few at a time
// (one pass over dst for up to six of them, instead of one each), in the
// order of one at a time, so the sums are the same.
func (k *kernel) combine(dst []float32, y int, row func(j int) []float32) {
	w := k.weights[y*k.taps : y*k.taps+k.count[y]]
	j := k.start[y]
	switch len(w) {
	case 1:
		scaleInto(dst, row(j), w[0])
		return
	case 2:
		scale2Into(dst, row(j), row(j+1), w[0], w[1])
		return
	}
	t := 3
	if len(w) >= 6 { // an enlargement's six taps, the fused mask's nine or ten
		scale6Into(dst, row(j), row(j+1), row(j+2), row(j+3), row(j+4), row(j+5), w[0], w[1], w[2], w[3], w[4], w[5])
		t = 6
	} else {
		scale3Into(dst, row(j), row(j+1), row(j+2), w[0], w[1], w[2])
	}
	for t < len(w) {
		switch n := len(w) - t; {
		case n >= 4:
			add4Scaled(dst, row(j+t), row(j+t+1), row(j+t+2), row(j+t+3), w[t], w[t+1], w[t+2], w[t+3])
			t += 4
		case n == 3:
			add3Scaled(dst, row(j+t), row(j+t+1), row(j+t+2), w[t], w[t+1], w[t+2])
			t += 3
		default:
			addScaled(dst, row(j+t), w[t])
			t++
		}
	}
}

// scale2Into sets dst to wa*a + wb*b.
func scale2Into(dst, a, b []float32, wa, wb float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = wa*a[i] + wb*b[i]
	}
}

// scale3Into sets dst to wa*a + wb*b + wc*c.
func scale3Into(dst, a, b, c []float32, wa, wb, wc float32) {
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i := range dst {
		dst[i] = wa*a[i] + wb*b[i] + wc*c[i]
	}
}

// scale6Into sets dst to wa*a + wb*b + ... + wf*f, summed in that order:
// one pass over dst instead of two, a third fewer instructions.
func scale6Into(dst, a, b, c, d, e, f []float32, wa, wb, wc, wd, we, wf float32) {
	a, b, c, d, e, f = a[:len(dst)], b[:len(dst)], c[:len(dst)], d[:len(dst)], e[:len(dst)], f[:len(dst)]
	for i := range dst {
		dst[i] = wa*a[i] + wb*b[i] + wc*c[i] + wd*d[i] + we*e[i] + wf*f[i]
	}
}

// add3Scaled adds wa*a, wb*b and wc*c to dst, in that order.
func add3Scaled(dst, a, b, c []float32, wa, wb, wc float32) {
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i := range dst {
		dst[i] = dst[i] + wa*a[i] + wb*b[i] + wc*c[i]
	}
}

// add4Scaled adds wa*a, wb*b, wc*c and wd*d to dst, in that order.
func add4Scaled(dst, a, b, c, d []float32, wa, wb, wc, wd float32) {
	a, b, c, d = a[:len(dst)], b[:len(dst)], c[:len(dst)], d[:len(dst)]
	for i := range dst {
		dst[i] = dst[i] + wa*a[i] + wb*b[i] + wc*c[i] + wd*d[i]
	}
}

// scaleInto sets dst to w*src.
func scaleInto(dst, src []float32, w float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = w * v
	}
}

// addScaled adds w*src to dst.
func addScaled(dst, src []float32, w float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += w * v
	}
}

// span is the part of the source axis the kernel reads: [lo, hi).
func (k *kernel) span() (lo, hi int) {
	last := len(k.start) - 1
	return k.start[0], k.start[last] + k.count[last] // both grow with the output index
}

// maxCount is the most source pixels one output pixel reads.
func (k *kernel) maxCount() int { return max(k.most, 1) }

// shifted is k reading a source whose first pixel is source pixel origin:
// a horizontal kernel of the pipeline, with its six set.
func (k *kernel) shifted(origin int) *kernel {
	s := *k
	s.start = make([]int, len(k.start))
	for i, v := range k.start {
		s.start[i] = v - origin
	}
	return s.withSix()
}

// geometry says where the source lands in the output.
type geometry struct {
	outW, outH int
	// The placed rectangle: the whole output when cropping, the fitted,
	// centred rectangle otherwise.
	placeX, placeY, placeW, placeH int
	winX, winY                     window // the part of the source shown in it
}

// fitGeometry places a srcW x srcH source in a width x height output.
//
// With crop, the source covers the whole output at one scale for both axes
// and the overflow is cut off equally on both sides (cover, centre crop):
// nothing is stretched and nothing is padded. Without crop, the whole source
// fits inside the output at one scale and is centred; the rest of the output
// is padded (contain). The fitted size is rounded to whole pixels, so the
// two axes may differ by less than a pixel's worth of scale: that keeps the
// source's edges on pixel boundaries, so the pad does not bleed into it.
func fitGeometry(srcW, srcH, width, height int, crop bool) geometry {
	g := geometry{outW: width, outH: height}
	sx := float64(width) / float64(srcW)
	sy := float64(height) / float64(srcH)
	if crop {
		s := math.Max(sx, sy)
		g.placeW, g.placeH = width, height
		g.winX = window{(float64(srcW) - float64(width)/s) / 2, float64(width) / s}
		g.winY = window{(float64(srcH) - float64(height)/s) / 2, float64(height) / s}
		return g
	}
	s := math.Min(sx, sy)
	g.placeW = min(max(int(math.Round(float64(srcW)*s)), 1), width)
	g.placeH = min(max(int(math.Round(float64(srcH)*s)), 1), height)
	g.placeX, g.placeY = (width-g.placeW)/2, (height-g.placeH)/2
	g.winX = window{0, float64(srcW)}
	g.winY = window{0, float64(srcH)}
	return g
}
