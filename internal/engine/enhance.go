package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"math"
	"time"
)

// Enhance is the reference engine of standard-enhance (spec 4.1): a
// faithful, deterministic upscaler of one photo.
//
// The pipeline, and the space each step works in:
//
//  1. Decode the image_url input (PNG, JPEG or WebP, at most
//     MaxSourcePixels) to premultiplied sRGB-encoded floats.
//  2. fix_compression: smooth JPEG's 8x8 block edges (deblock).
//  3. denoise: edge-preserving bilateral smoothing.
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
// The two source filters act on the source's own pixel grid (where JPEG's
// blocks are, and where noise is one pixel wide), before enlargement makes
// both bigger. A filter at 0 is skipped, so it changes nothing.
//
// Fields without an effect here: prompt, model, subject_detection and the
// face_enhancement fields steer a learned model this reference does not
// have; seed, because nothing in it is random. The same request and input
// always give the same bytes.
type Enhance struct{}

// maxUpscalePixels bounds the upscaling pass's intermediate image: 16 bytes
// a pixel, and 4 more while its detail is restored.
const maxUpscalePixels = 32_000_000

// stripRows is the height of the unit of parallel work and of progress. A
// strip's result does not depend on which goroutine computes it.
const stripRows = 32

// enhanceRequest is what Enhance reads of the request. Pixel sizes are
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

// Run implements Engine. It calls report from its worker goroutines, one
// call at a time.
func (Enhance) Run(ctx context.Context, j Job, report Report) (files []File, err error) {
	defer func() {
		if v := recover(); v != nil { // a bug fails the job, not the worker
			files, err = nil, fmt.Errorf("enhance: panic: %v", v)
		}
	}()
	req, err := parseEnhanceRequest(j.Request)
	if err != nil {
		return nil, err
	}
	var input *Input
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
	out := outputFormats[req.OutputFormat]
	if req.OutputFormat == "webp" && (width > MaxWebPSide || height > MaxWebPSide || width*height > MaxWebPPixels) {
		return nil, InvalidInput("a webp output may be at most %d pixels wide or high and %d megapixels in all; ask for png or jpg",
			MaxWebPSide, MaxWebPPixels/1_000_000)
	}
	format, cfg, err := sniff(input.Data)
	if err != nil {
		return nil, err
	}
	p := newEnhancePlan(req, cfg.Width, cfg.Height)
	e := &enhanceJob{req: req, plan: p, out: out}
	e.run = newRunner(ctx, newProgress(report, 0))
	e.run.prog.total = e.units()
	return e.do(format, input.Data)
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
	// would only shrink it again) nor past the memory bound.
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

// Work units are roughly nanoseconds of one core (measured on a 2-core
// amd64 machine), so progress moves at an even pace; parallel phases count
// per core.
const (
	nsDecode   = 12 // per source pixel
	nsConvert  = 4  // per pixel, each conversion
	nsDeblock  = 2
	nsDenoise  = 80
	nsTap      = 1.2 // per pixel and kernel tap of a horizontal pass
	nsTapV     = 1.5
	nsSharpen  = 0.9 // per pixel and blur tap
	nsQuantize = 13
)

// units is the work the whole job will do.
func (e *enhanceJob) units() float64 {
	p, par := e.plan, 1/float64(e.run.workers)
	src := float64(p.srcW * p.srcH)
	total := src*nsDecode + src*nsConvert*2*par
	if e.req.FixCompression > 0 {
		total += src * nsDeblock * par
	}
	if e.req.Denoise > 0 {
		total += src * nsDenoise * par
	}
	w, h := p.srcW, p.srcH
	if p.upW > 0 {
		total += resampleUnits(p.upW, p.upH, p.geo.winX, p.geo.winY, 0) * par
		total += sharpenUnits(p.upW, p.upH, p.upscale()) * par
		w, h = p.upW, p.upH
	}
	gw, gh := p.finalWindows(w, h)
	halo := 0
	if e.req.Sharpen > 0 {
		total += sharpenUnits(p.geo.placeW, p.geo.placeH, p.finalScale(w)) * par
		halo = int(math.Ceil(3 * sharpenSigma(p.finalScale(w))))
	}
	total += resampleUnits(p.geo.placeW, p.geo.placeH, gw, gh, halo) * par
	outPx := float64(p.geo.outW * p.geo.outH)
	return total + outPx*nsQuantize*par + outPx*e.out.nsPerPixel
}

// resampleUnits is the work of resampling to outW x outH in strips that
// each resample halo more rows on both sides.
func resampleUnits(outW, outH int, winX, winY window, halo int) float64 {
	tapsX := 2*lanczosLobes*math.Max(winX.length/float64(outW), 1) + 1
	tapsY := 2*lanczosLobes*math.Max(winY.length/float64(outH), 1) + 1
	strips := math.Ceil(float64(outH) / stripRows)
	rowsV := float64(outH) + strips*float64(2*halo)
	rowsH := rowsV*winY.length/float64(outH) + strips*tapsY
	return rowsH*float64(outW)*tapsX*nsTap + rowsV*float64(outW)*tapsY*nsTapV
}

func sharpenUnits(w, h int, scale float64) float64 {
	taps := 2*math.Ceil(3*sharpenSigma(scale)) + 1
	return float64(w*h) * taps * 2 * nsSharpen
}

// upscale is the upscaling pass's enlargement.
func (p enhancePlan) upscale() float64 { return float64(p.upW) / p.geo.winX.length }

// finalWindows are the windows of the final resample's source (srcW x srcH):
// the source's shown part, or the whole of the upscaling pass's output,
// which is that part already.
func (p enhancePlan) finalWindows(srcW, srcH int) (window, window) {
	if p.upW > 0 {
		return window{0, float64(srcW)}, window{0, float64(srcH)}
	}
	return p.geo.winX, p.geo.winY
}

// finalScale is the final resample's enlargement from a source srcW wide.
func (p enhancePlan) finalScale(srcW int) float64 {
	winX, _ := p.finalWindows(srcW, 0)
	return float64(p.geo.placeW) / winX.length
}

// enhanceJob is one Run's state.
type enhanceJob struct {
	req  enhanceRequest
	plan enhancePlan
	out  outputFormat
	run  *runner
}

func (e *enhanceJob) do(format *sourceFormat, data []byte) ([]File, error) {
	p, run := e.plan, e.run
	par := 1 / float64(run.workers)
	srcPx := float64(p.srcW * p.srcH)

	var decoded image.Image
	err := run.unmetered(srcPx*nsDecode, time.Duration(srcPx*nsDecode), func(abort <-chan struct{}) error {
		m, err := format.read(data, abort)
		decoded = m
		return err
	})
	if err != nil {
		return nil, err
	}
	src, err := fromImage(run, decoded, srcPx*nsConvert*par)
	decoded = nil // the float copy replaces it; let it go before the big buffers come
	if err != nil {
		return nil, err
	}
	if e.req.FixCompression > 0 {
		if err := deblock(run, src, e.req.FixCompression, srcPx*nsDeblock*par); err != nil {
			return nil, err
		}
	}
	if e.req.Denoise > 0 {
		if src, err = denoise(run, src, e.req.Denoise, srcPx*nsDenoise*par); err != nil {
			return nil, err
		}
	}
	if err := toLinear(run, src, srcPx*nsConvert*par); err != nil {
		return nil, err
	}
	if p.upW > 0 {
		if src, err = e.upscalePass(src); err != nil {
			return nil, err
		}
	}
	img, err := e.finish(src)
	if err != nil {
		return nil, err
	}
	data, err = e.encode(img)
	if err != nil {
		return nil, err
	}
	if err := run.check(); err != nil {
		return nil, err // stopped during the last report: the job is no longer ours
	}
	return []File{{ContentType: e.out.contentType, Ext: e.out.ext, Data: data}}, nil
}

// upscalePass enlarges the shown part of src to upW x upH and restores the
// detail interpolation softens.
func (e *enhanceJob) upscalePass(src *raster) (*raster, error) {
	p, run := e.plan, e.run
	par := 1 / float64(run.workers)
	rs := &resampler{src: src, kx: newKernel(src.w, p.upW, p.geo.winX), ky: newKernel(src.h, p.upH, p.geo.winY)}
	up := newRaster(p.upW, p.upH)
	err := run.rows(up.h, stripRows, resampleUnits(p.upW, p.upH, p.geo.winX, p.geo.winY, 0)*par, func() func(int, int) {
		var scratch []float32
		return func(y0, y1 int) {
			rs.rows(y0, y1, up.row, &scratch)
			for i := 4 * y0 * up.w; i < 4*y1*up.w; i += 4 {
				clampPixel(up.pix[i : i+4]) // ringing must not compound over two passes
			}
		}
	})
	if err != nil {
		return nil, err
	}
	scale := p.upscale()
	err = sharpen(run, up, sharpenSigma(scale), e.req.Strength*maxSharpenGain, sharpenUnits(up.w, up.h, scale)*par)
	return up, err
}

// finish resamples src into the placed rectangle, sharpens and quantises
// it, strip by strip, into the output image. Only the 8-bit output is ever
// whole: a float copy of a 22000 x 22000 output would not fit in memory.
func (e *enhanceJob) finish(src *raster) (image.Image, error) {
	p, run, g := e.plan, e.run, e.plan.geo
	par := 1 / float64(run.workers)
	winX, winY := p.finalWindows(src.w, src.h)
	rs := &resampler{src: src, kx: newKernel(src.w, g.placeW, winX), ky: newKernel(src.h, g.placeH, winY)}

	overWhite := !e.out.hasAlpha
	var img image.Image
	var pix []uint8
	if overWhite {
		m := image.NewRGBA(image.Rect(0, 0, g.outW, g.outH))
		img, pix = m, m.Pix
	} else {
		m := image.NewNRGBA(image.Rect(0, 0, g.outW, g.outH))
		img, pix = m, m.Pix
	}
	var pad [4]uint8 // transparent
	if overWhite {
		pad = [4]uint8{255, 255, 255, 255}
	}

	var mask []float32
	halo := 0
	gain := float32(e.req.Sharpen * maxSharpenGain)
	if gain > 0 {
		mask = gaussian(sharpenSigma(p.finalScale(src.w)))
		halo = len(mask) / 2
	}
	units := resampleUnits(g.placeW, g.placeH, winX, winY, halo) + float64(g.outW*g.outH)*nsQuantize
	if gain > 0 {
		units += sharpenUnits(g.placeW, g.placeH, p.finalScale(src.w))
	}
	rowBytes := 4 * g.outW
	err := run.rows(g.outH, stripRows, units*par, func() func(int, int) {
		// A strip needs halo rows on each side for the mask's blur.
		local := newRaster(g.placeW, stripRows+2*halo)
		var hscratch, blurred, scratch []float32
		if gain > 0 {
			blurred = make([]float32, g.placeW*(stripRows+2*halo))
			scratch = make([]float32, g.placeW)
		}
		blurredRow := func(i int) []float32 { return blurred[i*g.placeW : (i+1)*g.placeW] }
		return func(y0, y1 int) {
			// Rows of the strip inside the placed rectangle, in its coordinates.
			py0 := min(max(y0-g.placeY, 0), g.placeH)
			py1 := min(max(y1-g.placeY, 0), g.placeH)
			a, b := max(py0-halo, 0), min(py1+halo, g.placeH)
			if a < b {
				rs.rows(a, b, func(y int) []float32 { return local.row(y - a) }, &hscratch)
			}
			if gain > 0 {
				for y := a; y < b; y++ {
					blurRow(blurredRow(y-a), local.row(y-a), scratch, mask)
				}
				for y := py0; y < py1; y++ {
					sharpenRow(local.row(y-a), y, g.placeH, mask, gain, func(j int) []float32 { return blurredRow(j - a) }, scratch)
				}
			}
			for oy := y0; oy < y1; oy++ {
				out := pix[oy*rowBytes : (oy+1)*rowBytes]
				py := oy - g.placeY
				if py < 0 || py >= g.placeH {
					fill(out, pad)
					continue
				}
				fill(out[:4*g.placeX], pad)
				fill(out[4*(g.placeX+g.placeW):], pad)
				in := local.row(py - a)
				for x := range g.placeW {
					o := out[4*(g.placeX+x) : 4*(g.placeX+x)+4 : 4*(g.placeX+x)+4]
					o[0], o[1], o[2], o[3] = to8(in[4*x:4*x+4], overWhite)
				}
			}
		}
	})
	return img, err
}

func fill(pix []uint8, c [4]uint8) {
	if c == [4]uint8{} {
		return // new images are transparent already
	}
	for i := 0; i+4 <= len(pix); i += 4 {
		pix[i], pix[i+1], pix[i+2], pix[i+3] = c[0], c[1], c[2], c[3]
	}
}

// encode writes the output file. Encoders cannot report progress, so an
// estimate stands in; PNG and JPEG stop at their next write when the job
// is stopped (the WebP encoder writes only at its end).
func (e *enhanceJob) encode(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	units := float64(img.Bounds().Dx()*img.Bounds().Dy()) * e.out.nsPerPixel
	err := e.run.unmetered(units, time.Duration(units), func(abort <-chan struct{}) error {
		return e.out.encode(&abortWriter{w: &buf, abort: abort}, img)
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
