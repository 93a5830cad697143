// Package enhance is the reference engine of standard-enhance: a streaming,
// deterministic upscaler of one photo with its filters and encoders.
package enhance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"genjobs/internal/engine"
	"genjobs/internal/engine/enhance/progress"
	"genjobs/internal/engine/enhance/stripenc"
)

// Engine is the reference engine of standard-enhance (docs/api.md, "Choices per model"): a
// faithful, deterministic upscaler of one photo.
//
// The steps, and the space each works in:
//
//  1. Decode the image_url input (PNG, JPEG or WebP, at most
//     MaxSourcePixels), keeping it as decoded (8-bit).
//  2. fix_compression: smooth JPEG's 8x8 block edges (deblock), on
//     premultiplied sRGB-encoded values.
//  3. denoise: edge-preserving bilateral smoothing, likewise.
//  4. Convert to premultiplied linear light.
//  5. upscaling_activated: enlarge the shown part of the source by
//     image_scaling_factor with Lanczos-3, at most to the size it will
//     have in the output (and at most maxUpscalePixels), then restore
//     detail with an unsharp mask whose gain follows strength.
//  6. Resample with Lanczos-3 to exactly width x height: cover and centre
//     crop with crop_to_fill, else fit, centre and pad (transparent for PNG
//     and WebP, white for JPEG).
//  7. sharpen: unsharp mask at the output's scale.
//  8. Encode as output_format: PNG, JPEG at quality 90, or lossless WebP.
//
// Steps 2 to 8 stream (pipeline.go): the encoder asks for strips of output
// rows on every core, and each strip pulls the rows it needs through the
// steps, so neither the output nor any float copy of an image is ever whole
// in memory; only the decoded source is. With Job.Outputs set, the file goes
// to it as the encoder writes it.
//
// The two source filters act on the source's own pixel grid (where JPEG's
// blocks are, and where noise is one pixel wide), before enlargement makes
// both bigger. A filter at 0 is skipped, so it changes nothing.
//
// Fields without an effect here: prompt, model, subject_detection and the
// face_enhancement fields steer a learned model this reference does not
// have; seed, because nothing in it is random. The same request and input
// always give the same bytes.
type Engine struct{}

// maxUpscalePixels bounds the upscaling pass's output. It streams like the
// rest, so this bounds time, not memory: past it, the pass costs more than
// the detail it adds to a final resample that enlarges anyway.
const maxUpscalePixels = 32_000_000

// enhanceRequest is what Engine reads of the request. Pixel sizes are
// float64 because the validated request keeps numbers as the client wrote
// them (1024.0 is a valid width).
type enhanceRequest struct {
	Width              float64 `json:"width"`
	Height             float64 `json:"height"`
	OutputFormat       string  `json:"output_format"`
	CropToFill         bool    `json:"crop_to_fill"`
	UpscalingActivated bool    `json:"upscaling_activated"`
	ImageScalingFactor float64 `json:"image_scaling_factor"`
	Sharpen            float64 `json:"sharpen"`
	Denoise            float64 `json:"denoise"`
	FixCompression     float64 `json:"fix_compression"`
	Strength           float64 `json:"strength"`
}

// parseEnhanceRequest reads a validated request. The checks repeat the
// schema's only so that a request that skipped validation cannot make the
// engine misbehave; such a failure is the service's, not the client's.
func parseEnhanceRequest(raw json.RawMessage) (enhanceRequest, error) {
	req := enhanceRequest{ // the schema's defaults
		OutputFormat:       "jpg",
		ImageScalingFactor: 1,
		Sharpen:            0.5,
		Denoise:            0.5,
		FixCompression:     0.5,
		Strength:           0.5,
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, fmt.Errorf("enhance: request: %w", err)
	}
	for _, side := range []float64{req.Width, req.Height} {
		if side != math.Trunc(side) || side < 1 || side > 32000 {
			return req, fmt.Errorf("enhance: request: output size %v x %v is not whole pixels in 1..32000", req.Width, req.Height)
		}
	}
	if _, ok := outputFormats[req.OutputFormat]; !ok {
		return req, fmt.Errorf("enhance: request: unknown output_format %q", req.OutputFormat)
	}
	if !(req.ImageScalingFactor >= 1 && req.ImageScalingFactor <= 32) {
		return req, fmt.Errorf("enhance: request: image_scaling_factor %v outside 1..32", req.ImageScalingFactor)
	}
	for _, amount := range []float64{req.Sharpen, req.Denoise, req.FixCompression, req.Strength} {
		if !(amount >= 0 && amount <= 1) {
			return req, fmt.Errorf("enhance: request: amount %v outside 0..1", amount)
		}
	}
	return req, nil
}

// Run implements Engine. It calls report from the encoder's goroutines, one
// call at a time.
func (Engine) Run(ctx context.Context, j engine.Job, report engine.Report) (files []engine.File, err error) {
	defer func() {
		if v := recover(); v != nil { // a bug fails the job, not the worker
			files, err = nil, fmt.Errorf("enhance: panic: %v", v)
		}
	}()
	e, err := newEnhanceJob(ctx, j, report)
	if err != nil {
		return nil, err
	}
	// j is not read past here, so that the collection after decoding
	// finds the input held by no one but the caller.
	sink := j.Outputs
	if err := e.decode(); err != nil {
		return nil, err
	}
	return e.write(sink)
}

// newEnhanceJob checks the request and the input's header and plans the
// work; nothing is decoded yet.
func newEnhanceJob(ctx context.Context, j engine.Job, report engine.Report) (*enhanceJob, error) {
	req, err := parseEnhanceRequest(j.Request)
	if err != nil {
		return nil, err
	}
	var input *engine.Input
	for i := range j.Inputs {
		if j.Inputs[i].Field == "image_url" {
			input = &j.Inputs[i]
			break
		}
	}
	if input == nil {
		return nil, errors.New("enhance: the job has no image_url input")
	}
	width, height := int(req.Width), int(req.Height)
	if width*height > engine.MaxOutputPixels {
		return nil, engine.InvalidInput("the output may hold at most %d pixels (22000 x 22000); %d x %d is %d",
			engine.MaxOutputPixels, width, height, width*height)
	}
	if req.OutputFormat == "webp" && (width > engine.MaxWebPSide || height > engine.MaxWebPSide || width*height > engine.MaxWebPPixels) {
		return nil, engine.InvalidInput("a webp output may be at most %d pixels wide or high and %d megapixels in all; ask for png or jpg",
			engine.MaxWebPSide, engine.MaxWebPPixels/1_000_000)
	}
	format, cfg, err := sniff(input.Data, input.ContentType)
	if err != nil {
		return nil, err
	}
	e := &enhanceJob{req: req, out: outputFormats[req.OutputFormat], format: format, data: input.Data}
	e.plan = newEnhancePlan(req, cfg.Width, cfg.Height)
	e.run = progress.NewRunner(ctx, progress.New(report, 0))
	e.decodeUnits, e.rowUnits, e.tailUnits = e.units()
	e.run.Prog.Total = e.decodeUnits + e.rowUnits*float64(height) + e.tailUnits
	return e, nil
}

// enhancePlan is the work a job will do, known before any of it is done.
type enhancePlan struct {
	srcW, srcH int
	geo        geometry
	// upW x upH is the upscaling pass's output; 0 x 0 when it does not run.
	upW, upH int
}

func newEnhancePlan(req enhanceRequest, srcW, srcH int) enhancePlan {
	p := enhancePlan{srcW: srcW, srcH: srcH}
	p.geo = fitGeometry(srcW, srcH, int(req.Width), int(req.Height), req.CropToFill)
	if !req.UpscalingActivated {
		return p
	}
	// The pass enlarges the shown part of the source by the factor, but
	// never past the size that part has in the output (the final resample
	// would only shrink it again) nor past maxUpscalePixels.
	winW, winH := p.geo.winX.length, p.geo.winY.length
	f := min(req.ImageScalingFactor,
		float64(p.geo.placeW)/winW, float64(p.geo.placeH)/winH,
		math.Sqrt(maxUpscalePixels/(winW*winH)))
	upW, upH := int(math.Round(winW*f)), int(math.Round(winH*f))
	if float64(upW)*float64(upH) <= winW*winH {
		return p // not an enlargement: nothing for the pass to add
	}
	p.upW, p.upH = max(upW, 1), max(upH, 1)
	return p
}

// upscale is the upscaling pass's enlargement.
func (p enhancePlan) upscale() float64 { return float64(p.upW) / p.geo.winX.length }

// finalScale is the final resample's enlargement.
func (p enhancePlan) finalScale() float64 {
	if p.upW > 0 {
		return float64(p.geo.placeW) / float64(p.upW)
	}
	return float64(p.geo.placeW) / p.geo.winX.length
}

// enhanceJob is one Run's state.
type enhanceJob struct {
	req    enhanceRequest
	plan   enhancePlan
	out    outputFormat
	format *engine.Format
	data   []byte // the input, until decoded
	run    *progress.Runner
	pipe   *pipeline // once decoded
	// Progress: the decoder's share, each output row's, and the share of
	// the encoder's work after the last row (WebP's, all of it).
	decodeUnits, rowUnits, tailUnits float64
	rowsDone                         atomic.Int64 // output rows filled
}

// decode decodes the input and builds the pipeline over it.
func (e *enhanceJob) decode() error {
	var decoded image.Image
	err := e.run.Unmetered(e.decodeUnits, time.Duration(e.decodeUnits), func(abort <-chan struct{}) error {
		m, err := read(e.format, e.data, abort)
		decoded = m
		return err
	})
	if err != nil {
		return err
	}
	e.pipe = e.newPipeline(newSource(decoded))
	if !e.out.streams {
		return nil
	}
	// What decoding and planning leave behind (the encoded input, when the
	// caller holds it no longer, as the worker and enhancecli do not; the
	// decoder's buffers; the kernels built to measure spans) is garbage
	// that, at the collector's pace, no collection would take before a
	// streamed output is done: the heap only grows from here to the
	// strips' buffers and rows, short of the next goal, twice the decoded
	// source. One collection now (the live heap is mostly the source's
	// pixels, which hold no pointers: little to mark) lets those buffers
	// reuse it, and the peak is the source and the rows in flight. Not
	// before WebP's whole-image encode, whose collections the encoder's
	// memory limit paces (stripenc.WebP): letting go of the input there
	// moves them, and its peak at 4096² rose from 339 to 401 MiB, a third
	// more with this collection.
	e.data = nil // no longer read
	runtime.GC()
	return nil
}

// write encodes the output into a file of sink, or into the file it
// returns when sink is nil.
func (e *enhanceJob) write(sink engine.Sink) ([]engine.File, error) {
	var buf bytes.Buffer
	var dst io.Writer = &buf
	var file io.WriteCloser
	if sink != nil {
		var err error
		if file, err = sink.Create(e.out.contentType, e.out.ext); err != nil {
			return nil, fmt.Errorf("enhance: output: %w", err)
		}
		dst = file
	}
	if err := e.encode(&stopWriter{w: dst, run: e.run}); err != nil {
		return nil, err // an unclosed file is discarded by the sink's owner
	}
	if err := e.run.Check(); err != nil {
		return nil, err // stopped during the last report: the job is no longer ours
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return nil, fmt.Errorf("enhance: output: %w", err)
		}
		return nil, nil
	}
	return []engine.File{{ContentType: e.out.contentType, Ext: e.out.ext, Data: buf.Bytes()}}, nil
}

// newPipeline builds the stages the plan asks for over src.
func (e *enhanceJob) newPipeline(src *source) *pipeline {
	p, g := e.plan, e.plan.geo
	pipe := &pipeline{geo: g, overWhite: !e.out.hasAlpha}
	if pipe.overWhite {
		pipe.pad = [4]uint8{255, 255, 255, 255}
	}
	// The first resample reads the shown part of the source, and maps it
	// to the upscaling pass's size or straight to the placed rectangle.
	firstW, firstH := g.placeW, g.placeH
	if p.upW > 0 {
		firstW, firstH = p.upW, p.upH
	}
	x0, x1 := newKernel(src.w, firstW, g.winX).span()
	pipe.source = newSourceSide(src, x0, x1, e.req.FixCompression, e.req.Denoise)
	pipe.first = newResampling(src.w, src.h, firstW, firstH, g.winX, g.winY, x0, p.upW > 0)
	if 3*g.winY.length <= float64(firstH) && (e.req.FixCompression > 0 || e.req.Denoise > 0) {
		// Enlarging 3x or more, a strip reads so few source rows that its
		// halo is most of its filtering. The window: the rows of a strip a
		// worker and one more (the workers' strips are neighbours, give or
		// take one: a worker that falls further behind computes its own
		// again) and their halos, at most a few hundred source rows. On 2
		// cores, 4000² -> 16000² filters 4,060 to 4,100 source rows of
		// 4,000 with it, as with a window of 2 strips a worker, which held
		// 2 MiB more.
		perStrip := float64(stripenc.StripHeight)*g.winY.length/float64(firstH) + 1
		window := int(float64(e.run.Workers+1)*perStrip) + 4*newKernel(src.h, firstH, g.winY).maxCount()
		pipe.shared = newSharedRows(4*(x1-x0), window)
	}
	if p.upW > 0 {
		if gain := e.req.Strength * maxSharpenGain; gain > 0 {
			pipe.upDetail = &sharpening{w: p.upW, h: p.upH, mask: gaussian(sharpenSigma(p.upscale())), gain: float32(gain), clamp: true}
		}
		whole := func(n int) window { return window{0, float64(n)} }
		pipe.second = newResampling(p.upW, p.upH, g.placeW, g.placeH, whole(p.upW), whole(p.upH), 0, false)
	}
	pipe.last().opaque = src.opaque && !pipe.last().clamp
	if gain := e.req.Sharpen * maxSharpenGain; gain > 0 {
		pipe.sharpen = &sharpening{w: g.placeW, h: g.placeH, mask: gaussian(sharpenSigma(p.finalScale())), gain: float32(gain)}
		pipe.sharpen.fuse(pipe.last())
	}
	return pipe
}

// Work units are roughly nanoseconds of one core (measured on a 2-core
// amd64 machine), so progress moves at an even pace; the pipeline's count
// per core.
const (
	nsDecode   = 12 // per source pixel
	nsConvert  = 4  // per source pixel read
	nsDeblock  = 3
	nsDenoise  = 80
	nsTap      = 1.2 // per pixel and kernel tap of a horizontal pass
	nsTapV     = 1.2 // and of a vertical one
	nsSharpen  = 1   // per pixel and blur tap
	nsQuantize = 13
)

// units is the work the job will do: decoding, each output row, and the
// encoder's after the last row.
func (e *enhanceJob) units() (decode, perRow, tail float64) {
	p, g := e.plan, e.plan.geo
	decode = float64(p.srcW*p.srcH) * nsDecode
	srcPx := g.winX.length * g.winY.length
	work := srcPx * nsConvert
	if e.req.FixCompression > 0 {
		work += srcPx * nsDeblock
	}
	if e.req.Denoise > 0 {
		work += srcPx * nsDenoise
	}
	if p.upW > 0 {
		work += resampleUnits(g.winX.length, g.winY.length, p.upW, p.upH)
		work += sharpenUnits(p.upW, p.upH, p.upscale())
		work += resampleUnits(float64(p.upW), float64(p.upH), g.placeW, g.placeH)
	} else {
		work += resampleUnits(g.winX.length, g.winY.length, g.placeW, g.placeH)
	}
	if e.req.Sharpen > 0 {
		work += sharpenUnits(g.placeW, g.placeH, p.finalScale())
	}
	outPx := float64(g.outW * g.outH)
	work += float64(g.placeW*g.placeH) * nsQuantize
	if e.out.streams {
		work += outPx * e.out.nsPerPixel
	} else {
		tail = outPx * e.out.nsPerPixel
	}
	return decode, work / float64(e.run.Workers) / float64(g.outH), tail
}

// resampleUnits is the work of resampling inW x inH source pixels to outW x
// outH, vertically first when enlarging.
func resampleUnits(inW, inH float64, outW, outH int) float64 {
	ow, oh := float64(outW), float64(outH)
	tapsX := 2*lanczosLobes*math.Max(inW/ow, 1) + 1
	tapsY := 2*lanczosLobes*math.Max(inH/oh, 1) + 1
	if inH <= oh {
		return oh*inW*tapsY*nsTapV + oh*ow*tapsX*nsTap
	}
	return inH*ow*tapsX*nsTap + oh*ow*tapsY*nsTapV
}

func sharpenUnits(w, h int, scale float64) float64 {
	taps := 2*math.Ceil(3*sharpenSigma(scale)) + 1
	return float64(w*h) * taps * 2 * nsSharpen
}

// progressRows is how many output rows a strip fills between reports.
const progressRows = 4

// fillRows fills output rows [y0, y1); row(y) is row y's pixels. The
// encoder calls it on its goroutines, for disjoint strips.
func (e *enhanceJob) fillRows(y0, y1 int, row func(y int) []uint8) (err error) {
	defer func() {
		if v := recover(); v != nil { // on the encoder's goroutine: nobody else would catch it
			err = e.run.Prog.Fail(fmt.Errorf("enhance: panic in a strip: %v", v))
		}
	}()
	c := e.pipe.getChain(y0)
	if c == nil {
		c = e.pipe.newChain()
	}
	pending := 0
	for y := y0; y < y1; y++ {
		if err := e.run.Check(); err != nil {
			return err
		}
		e.pipe.outputRow(c, y, row(y))
		e.rowsDone.Add(1)
		if pending++; pending == progressRows {
			if err := e.run.Prog.Add(float64(pending) * e.rowUnits); err != nil {
				return err
			}
			pending = 0
		}
	}
	c.next = y1
	e.pipe.putChain(c)
	return e.run.Prog.Add(float64(pending) * e.rowUnits)
}

func (e *enhanceJob) fillRGBA(dst *image.RGBA) error {
	w := 4 * e.plan.geo.outW
	return e.fillRows(dst.Rect.Min.Y, dst.Rect.Max.Y, func(y int) []uint8 {
		i := dst.PixOffset(0, y)
		return dst.Pix[i : i+w : i+w]
	})
}

func (e *enhanceJob) fillNRGBA(dst *image.NRGBA) error {
	w := 4 * e.plan.geo.outW
	return e.fillRows(dst.Rect.Min.Y, dst.Rect.Max.Y, func(y int) []uint8 {
		i := dst.PixOffset(0, y)
		return dst.Pix[i : i+w : i+w]
	})
}

// encode runs the encoder, which fills the rows as it goes, into w. It
// returns as soon as the job is stopped (report refused, ctx ended, a strip
// failed), without waiting for the encoder's goroutine: that one stops at
// its next strip or write; w takes no write after encode returns.
func (e *enhanceJob) encode(w *stopWriter) error {
	run, g := e.run, e.plan.geo
	done := make(chan error, 1)
	go func() {
		_, err := engine.Guard(func() (struct{}, error) {
			return struct{}{}, e.out.encode(w, g.outW, g.outH, run.Workers, e)
		})
		done <- err
	}()
	ticker := time.NewTicker(progress.Tick)
	defer ticker.Stop()
	var tailStart time.Time
	for {
		select {
		case err := <-done:
			if stop := run.Check(); stop != nil {
				return stop
			}
			if err != nil {
				return fmt.Errorf("enhance: encode: %w", err)
			}
			return run.Prog.Add(e.tailUnits)
		case <-run.Ctx.Done():
			err := run.Prog.Fail(run.Ctx.Err())
			w.stop()
			return err
		case <-ticker.C:
			if err := run.Check(); err != nil {
				w.stop()
				return err
			}
			if e.rowsDone.Load() < int64(g.outH) || e.tailUnits == 0 {
				continue
			}
			// Every row is in: the encoder works on its own, unmetered.
			if tailStart.IsZero() {
				tailStart = time.Now()
			}
			expected := float64(max(time.Duration(e.tailUnits), progress.Tick))
			share := 1 - math.Exp(-float64(time.Since(tailStart))/expected)
			if err := run.Prog.Estimate(e.tailUnits * share); err != nil {
				w.stop()
				return err
			}
		}
	}
}

// stopWriter passes writes on until the job is stopped; stop waits for a
// write in progress, so that none reaches the sink after Run returns.
type stopWriter struct {
	mu      sync.Mutex
	w       io.Writer
	run     *progress.Runner
	stopped bool
}

func (s *stopWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return 0, errAborted
	}
	if err := s.run.Check(); err != nil {
		return 0, err
	}
	return s.w.Write(p)
}

func (s *stopWriter) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}
