package enhance

import (
	"sync"
)

// The streaming pipeline, libvips's way: the output is asked for strip by
// strip (by the encoder, on its goroutines), and each strip pulls the rows it
// needs through a chain of stages, each computing its rows from the rows of
// the stage below:
//
//	source (decoded, 8-bit) -> [deblock -> denoise] -> linear light
//	  -> [resample to the upscaling pass's size -> clamp -> detail mask]
//	  -> resample to the placed rectangle -> [sharpen] -> 8-bit output row
//
// Every worker has a chain of its own, and a stage keeps only the few rows
// the stage above reads at once (a ring), so memory is a few rows of each
// stage's width a worker, whatever the image's size. A strip that does not
// follow the chain's last one recomputes the rows around it (its halo);
// nothing is ever shared between workers but the read-only source, so the
// bytes do not depend on the strips or the number of cores.

// rowStage is one stage of a worker's chain: rows of stride float32s, the
// most recent keep of them held.
type rowStage struct {
	stride, keep int
	buf          []float32
	lo, hi       int // rows [lo, hi) are held; row y in slot y % keep
	compute      func(y int, dst []float32)
}

func newRowStage(stride, keep int, compute func(y int, dst []float32)) *rowStage {
	keep = max(keep, 1)
	return &rowStage{stride: stride, keep: keep, buf: make([]float32, stride*keep), compute: compute}
}

func (s *rowStage) slot(y int) []float32 {
	i := y % s.keep * s.stride
	return s.buf[i : i+s.stride : i+s.stride]
}

// row returns row y. It stays valid until the stage is asked for a row keep
// or more further on, or for one before those it holds (it then starts
// afresh). The stage above asks for rows in nearly increasing order, so
// within a strip each row is computed once.
func (s *rowStage) row(y int) []float32 {
	if y < s.lo || y >= s.hi+s.keep {
		s.lo, s.hi = y, y // a jump: start afresh at y
	}
	for s.hi <= y {
		s.compute(s.hi, s.slot(s.hi))
		s.hi++
		s.lo = max(s.lo, s.hi-s.keep)
	}
	return s.slot(y)
}

// resampling is one resample of the pipeline: kx and ky map the stage below
// (its rows start at its first needed column) onto outW x outH pixels.
type resampling struct {
	kx, ky *kernel
	// vFirst resamples vertically first, at the width of the stage below
	// (cheapest when enlarging: that width is the smaller one); else
	// horizontally first, into a ring of rows at the output's width (when
	// shrinking: the vertical kernel is then tall, and those rows narrow).
	vFirst bool
	clamp  bool // clamp every pixel (before a second pass)
	// opaque: the source is opaque and the output's alphas are only
	// compared with opaque (the last resample): an enlarging row sets
	// them to 1 (resampleRow6Opaque).
	opaque bool
}

// newResampling maps the windows of an inW x inH image onto outW x outH; the
// stage below's rows start at column inX0.
func newResampling(inW, inH, outW, outH int, winX, winY window, inX0 int, clamp bool) *resampling {
	ky := newKernel(inH, outH, winY)
	return &resampling{
		kx:     newKernel(inW, outW, winX).shifted(inX0),
		ky:     ky,
		vFirst: winY.length <= float64(outH),
		clamp:  clamp,
	}
}

// inKeep is how many rows of the stage below the resample holds at once.
func (r *resampling) inKeep() int {
	if r.vFirst {
		return r.ky.maxCount()
	}
	return 1
}

// stage returns the resampled rows of in.
func (r *resampling) stage(in *rowStage, keep int) *rowStage {
	outW := len(r.kx.start)
	finish := func(dst []float32) {
		if r.clamp {
			for i := 0; i+4 <= len(dst); i += 4 {
				clampPixel(dst[i : i+4 : i+4])
			}
		}
	}
	if r.vFirst {
		tmp := make([]float32, in.stride)
		return newRowStage(4*outW, keep, func(y int, dst []float32) {
			r.ky.combine(tmp, y, in.row)
			r.kx.resampleRowOf(dst, tmp, r.opaque)
			finish(dst)
		})
	}
	h := newRowStage(4*outW, r.ky.maxCount(), func(j int, dst []float32) { r.kx.resampleRow(dst, in.row(j)) })
	return newRowStage(4*outW, keep, func(y int, dst []float32) {
		r.ky.combine(dst, y, h.row)
		finish(dst)
	})
}

// sharpening is an unsharp mask over an image w x h.
type sharpening struct {
	w, h int
	mask []float32 // the blur's weights
	gain float32
	// clamp makes the sharpened pixels valid (before a resample). The
	// output's mask (no clamp) is left to the 8-bit conversion, which
	// clamps anyway: its rows carry, after the pixels, their blurred
	// luminance (rowStride), and the conversion adds the mask as it reads
	// each pixel (outputRow), one pass over the row less.
	clamp bool
	// fx, fy, when set, are the blur fused with the resample below it
	// (fuse): the blurred luminance straight from that resample's source.
	fx, fy *kernel
}

// fuse has the mask blur the luminance of r's source through r's kernels
// and its own at once, when r is linear (no clamp: luminance and resampling
// then commute) and enlarges vertically (r.vFirst: the source's rows are the
// narrower ones). The mask then reads each source row once, at the source's
// width, instead of its blur's 2r+1 rows of the output's width: at a 4x
// enlargement the dearest step of the default filters costs about a third.
func (s *sharpening) fuse(r *resampling) {
	if r.vFirst && !r.clamp {
		s.fx, s.fy = r.kx.blurred(s.mask), r.ky.blurred(s.mask)
		s.fx.withLumaTaps() // the horizontal one only: resampleLuma's
	}
}

// rowStride is the length of the stage's rows: the pixels, then the
// blurred luminance when the 8-bit conversion applies the mask.
func (s *sharpening) rowStride() int {
	if s.clamp {
		return 4 * s.w
	}
	return 5 * s.w
}

// blurredOf is where row y's blurred luminance goes: after the pixels of
// dst, when the 8-bit conversion applies the mask; else into scratch.
func (s *sharpening) blurredOf(dst, scratch []float32) []float32 {
	if s.clamp {
		return scratch
	}
	return dst[4*s.w : 5*s.w]
}

// finish applies the mask to the pixels of dst, unless the 8-bit
// conversion will.
func (s *sharpening) finish(dst, blurred []float32) {
	if s.clamp {
		sharpenApply(dst, blurred, s.gain, true)
	}
}

// fusedKeep is how many rows of the stage below r the fused mask holds.
func (s *sharpening) fusedKeep() int { return s.fy.maxCount() }

// fusedStage is the sharpened rows of r's resample of in, the mask's blur
// fused with it (fuse). in must hold fusedKeep rows: the blur reads a few
// rows further on than the resample, which then finds its rows still held.
func (s *sharpening) fusedStage(r *resampling, in *rowStage, keep int) *rowStage {
	inW := in.stride / 4
	luma := newRowStage(inW, s.fy.maxCount(), func(j int, dst []float32) { lumaRow(dst, in.row(j)) })
	across := make([]float32, inW)
	blurred := make([]float32, s.w)
	tmp := make([]float32, in.stride)
	return newRowStage(s.rowStride(), keep, func(y int, dst []float32) {
		b := s.blurredOf(dst, blurred)
		s.fy.combine(across, y, luma.row)
		s.fx.resampleLuma(b, across)
		r.ky.combine(tmp, y, in.row)
		r.kx.resampleRowOf(dst[:4*s.w], tmp, r.opaque)
		s.finish(dst, b)
	})
}

func (s *sharpening) radius() int { return len(s.mask) / 2 }

// inKeep is how many rows of the stage below the mask holds at once.
func (s *sharpening) inKeep() int { return s.radius() + 1 }

func (s *sharpening) stage(in *rowStage, keep int) *rowStage {
	r := s.radius()
	luma := make([]float32, s.w)
	blurred := newRowStage(s.w, 2*r+1, func(j int, dst []float32) { blurRow(dst, in.row(j), luma, s.mask) })
	acc := make([]float32, s.w)
	around := make([][]float32, len(s.mask))
	return newRowStage(s.rowStride(), keep, func(y int, dst []float32) {
		// The blur's vertical half, over the rows' horizontal blurs; past
		// the image's ends its edge rows repeat.
		for t := range around {
			around[t] = blurred.row(min(max(y+t-r, 0), s.h-1))
		}
		b := s.blurredOf(dst, acc)
		blurColumns(b, around, s.mask)
		copy(dst, in.row(y)[:4*s.w])
		s.finish(dst, b)
	})
}

// sourceSide is the source's part of the pipeline: the columns [x0, x1) the
// first resample reads, filtered and in premultiplied linear light.
type sourceSide struct {
	src       *source
	x0, x1    int
	deblock   float32 // fix_compression; 0 skips it
	denoise   float32 // 0 skips it
	lumaScale float32 // of denoise: denoiseScale
	dx0, dx1  int     // the columns the filters read: [x0, x1) and their halo
}

func newSourceSide(src *source, x0, x1 int, deblock, denoise float64) *sourceSide {
	s := &sourceSide{src: src, x0: x0, x1: x1, deblock: float32(deblock), denoise: float32(denoise)}
	s.dx0, s.dx1 = x0, x1
	if denoise > 0 {
		s.lumaScale = denoiseScale(denoise)
		s.dx0, s.dx1 = max(x0-denoiseRadius, 0), min(x1+denoiseRadius, src.w)
	}
	if deblock > 0 { // whole boundary groups
		s.dx0 = max(deblockGroup(s.dx0)-jpegBlock/2, 0)
		s.dx1 = min(deblockGroup(s.dx1-1)+jpegBlock/2, src.w)
	}
	return s
}

// stage returns the rows of columns [x0, x1).
func (s *sourceSide) stage(keep int) *rowStage {
	w := s.x1 - s.x0
	if s.deblock == 0 && s.denoise == 0 {
		return newRowStage(4*w, keep, func(y int, dst []float32) { s.src.linear(dst, s.x0, y) })
	}
	// Encoded rows of the filters' columns, deblocked when asked.
	var filtered *rowStage
	dw := s.dx1 - s.dx0
	inKeep := 1
	if s.denoise > 0 {
		inKeep = denoiseSide
	}
	if s.deblock > 0 {
		filtered = s.deblockStage(inKeep)
	} else {
		filtered = newRowStage(4*dw, inKeep, func(y int, dst []float32) { s.src.encoded(dst, s.dx0, y) })
	}
	if s.denoise == 0 {
		off := 4 * (s.x0 - s.dx0)
		return newRowStage(4*w, keep, func(y int, dst []float32) { toLinearRow(dst, filtered.row(y)[off:off+4*w]) })
	}
	return s.denoiseStage(filtered, keep)
}

// deblockStage returns encoded, deblocked rows of columns [dx0, dx1).
func (s *sourceSide) deblockStage(keep int) *rowStage {
	dw := s.dx1 - s.dx0
	// Vertical boundaries: each row on its own. Held: a group's eight rows
	// (b-4 .. b+3, read after b-2 .. b+1), and two more to spare.
	vertical := newRowStage(4*dw, jpegBlock+2, func(y int, dst []float32) {
		s.src.encoded(dst, s.dx0, y)
		deblockRow(dst, s.dx0, s.src.w, s.deblock)
	})
	// Horizontal boundaries: a row moves by its boundary's step, measured
	// on the two rows either side of it, once a group.
	step := make([]float32, 4*dw)
	stepOf := -1
	return newRowStage(4*dw, keep, func(y int, dst []float32) {
		b := deblockGroup(y)
		if !isDeblockBoundary(b, s.src.h) {
			copy(dst, vertical.row(y))
			return
		}
		if stepOf != b {
			p1, p0 := vertical.row(b-2), vertical.row(b-1)
			q0, q1 := vertical.row(b), vertical.row(b+1)
			deblockStepAt(step, p1, p0, q0, q1, s.deblock)
			stepOf = b
		}
		copy(dst, vertical.row(y))
		if y < b {
			deblockApply(dst, step, b-1-y, 1)
		} else {
			deblockApply(dst, step, y-b, -1)
		}
	})
}

// denoiseStage returns denoised rows of columns [x0, x1) in linear light;
// in has the encoded rows of columns [dx0, dx1).
func (s *sourceSide) denoiseStage(in *rowStage, keep int) *rowStage {
	w := s.x1 - s.x0
	luma := newRowStage(in.stride/4, denoiseSide, func(y int, dst []float32) { denoiseLuma(dst, in.row(y), s.lumaScale) })
	var cols [denoiseSide][]int32
	for j := range cols {
		cols[j] = make([]int32, w)
		for x := range w {
			cols[j][x] = int32(min(max(s.x0+x+j-denoiseRadius, 0), s.src.w-1) - s.dx0)
		}
	}
	dn := newDenoiser(&cols, s.src.opaque)
	var rows, lumas [denoiseSide][]float32
	return newRowStage(4*w, keep, func(y int, dst []float32) {
		for i := range denoiseSide {
			ny := min(max(y+i-denoiseRadius, 0), s.src.h-1)
			lumas[i] = luma.row(ny)
			rows[i] = in.row(ny)
		}
		dn.denoiseRow(dst, &rows, &lumas)
		for i := 0; i+4 <= len(dst); i += 4 {
			toLinearPixel(dst[i : i+4 : i+4])
		}
	})
}

// sharedRows holds the source side's latest rows for every chain, when
// filtering them is dear (denoise, deblock) and the first resample enlarges
// (3x or more):
// a strip then reads only a few source rows of its own, and without sharing
// each one would filter again the rows around it that the strip before it,
// on another core, filtered already. A row is the same whichever chain
// computes it, so sharing changes no byte; a row dropped from the window
// and asked for again is computed again.
type sharedRows struct {
	stride, window int
	mu             sync.Mutex
	rows           map[int][]float32
	hi             int // 1 + the furthest row held
	spare          [][]float32
}

func newSharedRows(stride, window int) *sharedRows {
	return &sharedRows{stride: stride, window: window, rows: map[int][]float32{}}
}

// get copies row y into dst if it is held.
func (s *sharedRows) get(y int, dst []float32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[y]
	if ok {
		copy(dst, r)
	}
	return ok
}

// put holds a copy of row y, dropping the rows a window or more behind the
// furthest one.
func (s *sharedRows) put(y int, row []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rows[y]; ok || y < s.hi-s.window {
		return
	}
	var buf []float32
	if n := len(s.spare); n > 0 {
		buf, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		buf = make([]float32, s.stride)
	}
	copy(buf, row)
	s.rows[y] = buf
	if y >= s.hi {
		s.hi = y + 1
		for k, r := range s.rows {
			if k < s.hi-s.window {
				delete(s.rows, k)
				s.spare = append(s.spare, r)
			}
		}
	}
}

// pipeline is what every worker's chain shares: read-only once built.
type pipeline struct {
	geo       geometry
	source    *sourceSide
	shared    *sharedRows // the source side's rows, when shared
	first     *resampling // to the placed rectangle, or to the upscaling pass's size
	upDetail  *sharpening // the upscaling pass's detail mask; nil without the pass or at strength 0
	second    *resampling // from the upscaling pass to the placed rectangle; nil without the pass
	sharpen   *sharpening // nil at sharpen 0
	overWhite bool        // JPEG: composite over white
	pad       [4]uint8

	mu   sync.Mutex
	free []*chain // chains no strip is using
}

// chain is one worker's stages.
type chain struct {
	placed *rowStage // the placed rectangle's rows, premultiplied linear
	next   int       // the output row after the last one it filled
}

func (p *pipeline) newChain() *chain {
	return &chain{placed: p.placedStage(1)}
}

func (p *pipeline) placedStage(keep int) *rowStage {
	switch {
	case p.sharpen == nil:
		return p.resampledStage(keep)
	case p.sharpen.fy != nil:
		return p.sharpen.fusedStage(p.last(), p.resampleInput(p.sharpen.fusedKeep()), keep)
	}
	return p.sharpen.stage(p.resampledStage(p.sharpen.inKeep()), keep)
}

// sourceStage is the source side's rows, through shared when set.
func (p *pipeline) sourceStage(keep int) *rowStage {
	if p.shared == nil {
		return p.source.stage(keep)
	}
	own := p.source.stage(1)
	return newRowStage(own.stride, keep, func(y int, dst []float32) {
		if p.shared.get(y, dst) {
			return
		}
		copy(dst, own.row(y))
		p.shared.put(y, dst)
	})
}

// last is the resample to the placed rectangle.
func (p *pipeline) last() *resampling {
	if p.second != nil {
		return p.second
	}
	return p.first
}

// resampleInput is the stage the last resample reads.
func (p *pipeline) resampleInput(keep int) *rowStage {
	if p.second == nil {
		return p.sourceStage(keep)
	}
	return p.upStage(keep)
}

// resampledStage is the placed rectangle before sharpening.
func (p *pipeline) resampledStage(keep int) *rowStage {
	r := p.last()
	return r.stage(p.resampleInput(r.inKeep()), keep)
}

// upStage is the upscaling pass's output.
func (p *pipeline) upStage(keep int) *rowStage {
	if p.upDetail == nil {
		return p.first.stage(p.sourceStage(p.first.inKeep()), keep)
	}
	up := p.first.stage(p.sourceStage(p.first.inKeep()), p.upDetail.inKeep())
	return p.upDetail.stage(up, keep)
}

// getChain takes a free chain, the one that filled the rows just above y0
// if it is free: the encoder fills a strip in bands (stripenc), and the
// chain that filled a strip's last band holds the rows around the next.
// Else the one furthest behind: the others may be another worker's,
// between two bands of its strip.
func (p *pipeline) getChain(y0 int) *chain {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.free)
	if n == 0 {
		return nil
	}
	i := 0
	for j, c := range p.free {
		if c.next == y0 {
			i = j
			break
		}
		if c.next < p.free[i].next {
			i = j
		}
	}
	c := p.free[i]
	p.free[i] = p.free[n-1]
	p.free = p.free[:n-1]
	return c
}

func (p *pipeline) putChain(c *chain) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, c)
}

// outputRow writes output row oy as 8-bit pixels: RGBA over white when
// overWhite, else non-premultiplied RGBA.
func (p *pipeline) outputRow(c *chain, oy int, out []uint8) {
	g := p.geo
	py := oy - g.placeY
	if py < 0 || py >= g.placeH {
		fill(out, p.pad)
		return
	}
	fill(out[:4*g.placeX], p.pad)
	fill(out[4*(g.placeX+g.placeW):], p.pad)
	row := c.placed.row(py)
	o := out[4*g.placeX : 4*(g.placeX+g.placeW)]
	if p.sharpen != nil { // the mask is added here (sharpening.clamp)
		sharpenTo8(o, row[:4*g.placeW], row[4*g.placeW:5*g.placeW], p.sharpen.gain, p.overWhite)
		return
	}
	to8Row(o, row[:4*g.placeW], p.overWhite)
}

// to8Row converts a row of premultiplied linear pixels with to8.
func to8Row(o []uint8, in []float32, overWhite bool) {
	for len(in) >= 4 && len(o) >= 4 {
		n := 4 * opaqueTo8(o, in)
		in, o = in[n:], o[n:]
		if len(in) >= 4 && len(o) >= 4 {
			o[0], o[1], o[2], o[3] = to8(in[:4], overWhite)
			in, o = in[4:], o[4:]
		}
	}
}

// opaqueTo8 converts the opaque pixels at the start of in (to8's first
// case: a photo's pixels, nearly all) and returns how many it converted.
// It calls nothing, so that its loop keeps its values in registers.
func opaqueTo8(o []uint8, in []float32) int {
	in = in[:min(len(in), len(o))&^3]
	o = o[:len(in)]
	for i := 0; i+4 <= len(in); i += 4 {
		px, q := in[i:i+4:i+4], o[i:i+4:i+4]
		if !(px[3] >= opaque) {
			return i / 4
		}
		q[0], q[1], q[2], q[3] = encode8(px[0]), encode8(px[1]), encode8(px[2]), 255
	}
	return len(in) / 4
}

// sharpenTo8 is to8Row of the pixels in sharpened by the unsharp mask of
// gain, blurred their blurred luminance: sharpenApply's sums, without
// storing them.
func sharpenTo8(o []uint8, in, blurred []float32, gain float32, overWhite bool) {
	for len(blurred) > 0 && len(in) >= 4 && len(o) >= 4 {
		n := sharpenOpaqueTo8(o, in, blurred, gain)
		in, o, blurred = in[4*n:], o[4*n:], blurred[n:]
		if len(blurred) > 0 && len(in) >= 4 && len(o) >= 4 {
			d := gain * (luminance(in) - blurred[0])
			o[0], o[1], o[2], o[3] = to8([]float32{in[0] + d, in[1] + d, in[2] + d, in[3]}, overWhite)
			in, o, blurred = in[4:], o[4:], blurred[1:]
		}
	}
}

// sharpenOpaqueTo8 is opaqueTo8 for sharpenTo8.
func sharpenOpaqueTo8(o []uint8, in, blurred []float32, gain float32) int {
	in = in[:min(len(in), len(o), 4*len(blurred))&^3]
	o = o[:len(in)]
	for i := 0; i+4 <= len(in); i += 4 {
		px, q := in[i:i+4:i+4], o[i:i+4:i+4]
		if !(px[3] >= opaque) {
			return i / 4
		}
		d := gain * (luminance(px) - blurred[i/4])
		q[0], q[1], q[2], q[3] = encode8(px[0]+d), encode8(px[1]+d), encode8(px[2]+d), 255
	}
	return len(in) / 4
}

func fill(pix []uint8, c [4]uint8) {
	for i := 0; i+4 <= len(pix); i += 4 {
		pix[i], pix[i+1], pix[i+2], pix[i+3] = c[0], c[1], c[2], c[3]
	}
}
