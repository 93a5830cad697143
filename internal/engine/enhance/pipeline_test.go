package enhance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/internal/engine"
)

// referenceResample is what a plain request (every filter off) must give:
// the source in premultiplied linear light, resampled whole, in float64,
// with a separable Lanczos-3 (widened by the ratio when shrinking, edge
// pixels repeated past the edges, weights normalised), placed by the
// request's rule (crop_to_fill: cover and centre-crop; else contain,
// centred, padded transparent), then back to 8-bit sRGB. It is written the
// obvious way, not the pipeline's.
func referenceResample(src image.Image, width, height int, crop bool) *image.NRGBA {
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	toLinear := func(v float64) float64 {
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	toSRGB := func(v float64) float64 {
		if v <= 0.0031308 {
			return v * 12.92
		}
		return 1.055*math.Pow(v, 1/2.4) - 0.055
	}
	lin := make([][4]float64, sw*sh)
	for y := range sh {
		for x := range sw {
			c := color.NRGBAModel.Convert(src.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
			a := float64(c.A) / 255
			lin[y*sw+x] = [4]float64{toLinear(float64(c.R)/255) * a, toLinear(float64(c.G)/255) * a, toLinear(float64(c.B)/255) * a, a}
		}
	}

	var placeX, placeY, placeW, placeH int
	var offX, offY, winW, winH float64
	sx, sy := float64(width)/float64(sw), float64(height)/float64(sh)
	if crop {
		s := math.Max(sx, sy)
		placeW, placeH = width, height
		winW, winH = float64(width)/s, float64(height)/s
		offX, offY = (float64(sw)-winW)/2, (float64(sh)-winH)/2
	} else {
		s := math.Min(sx, sy)
		placeW = min(max(int(math.Round(float64(sw)*s)), 1), width)
		placeH = min(max(int(math.Round(float64(sh)*s)), 1), height)
		placeX, placeY = (width-placeW)/2, (height-placeH)/2
		winW, winH = float64(sw), float64(sh)
	}

	type tap struct {
		j int
		w float64
	}
	lanczos3 := func(x float64) float64 {
		if x == 0 {
			return 1
		}
		if math.Abs(x) >= 3 {
			return 0
		}
		return 3 * math.Sin(math.Pi*x) * math.Sin(math.Pi*x/3) / (math.Pi * math.Pi * x * x)
	}
	taps := func(n, outN int, off, win float64) [][]tap {
		all := make([][]tap, outN)
		step := win / float64(outN)
		stretch := math.Max(step, 1)
		for i := range outN {
			c := off + (float64(i)+0.5)*step - 0.5
			var sum float64
			for j := int(math.Floor(c-3*stretch)) + 1; j <= int(math.Floor(c+3*stretch)); j++ {
				w := lanczos3((float64(j) - c) / stretch)
				all[i] = append(all[i], tap{min(max(j, 0), n-1), w})
				sum += w
			}
			for k := range all[i] {
				all[i][k].w /= sum
			}
		}
		return all
	}
	tx, ty := taps(sw, placeW, offX, winW), taps(sh, placeH, offY, winH)

	rows := make([][4]float64, placeW*sh) // horizontal pass, every source row
	for y := range sh {
		for x := range placeW {
			for _, t := range tx[x] {
				for c := range 4 {
					rows[y*placeW+x][c] += t.w * lin[y*sw+t.j][c]
				}
			}
		}
	}
	out := image.NewNRGBA(image.Rect(0, 0, width, height))
	to8 := func(v float64) uint8 { return uint8(math.Round(min(max(v, 0), 1) * 255)) }
	for y := range placeH {
		for x := range placeW {
			var p [4]float64
			for _, t := range ty[y] {
				for c := range 4 {
					p[c] += t.w * rows[t.j*placeW+x][c]
				}
			}
			a := min(max(p[3], 0), 1)
			if a < 0.5/255 {
				continue // transparent
			}
			out.SetNRGBA(placeX+x, placeY+y, color.NRGBA{
				to8(toSRGB(min(max(p[0]/a, 0), 1))), to8(toSRGB(min(max(p[1]/a, 0), 1))), to8(toSRGB(min(max(p[2]/a, 0), 1))), to8(a),
			})
		}
	}
	return out
}

// translucent is photo with alpha from clear to opaque across it.
func translucent(w, h int) *image.NRGBA {
	m := photo(w, h)
	for y := range h {
		for x := range w {
			m.Pix[m.PixOffset(x, y)+3] = uint8(min(255, 20*x+3*y))
		}
	}
	return m
}

// The pipeline's resample is the whole-image reference's, to within an
// 8-bit step, enlarging and shrinking, cropped and fitted, at other aspects.
func TestEnhanceMatchesAWholeImageResample(t *testing.T) {
	tests := []struct {
		name          string
		src           *image.NRGBA
		width, height int
		crop          bool
	}{
		{"up", translucent(40, 30), 100, 75, false},
		{"down", translucent(120, 90), 50, 37, false},
		{"far down", photo(200, 150), 9, 7, false},
		{"crop to a tall output", translucent(60, 40), 30, 70, true},
		{"crop up to a wide output", photo(48, 32), 97, 50, true},
		{"fit with pad", translucent(60, 40), 90, 90, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := enhance(t, request(tt.width, tt.height, map[string]any{"crop_to_fill": tt.crop}), pngBytes(tt.src))
			want := referenceResample(tt.src, tt.width, tt.height, tt.crop)
			if d := maxPremultipliedDiff(t, got, want); d > 1 {
				t.Errorf("differs from the reference by up to %d of 255", d)
			}
		})
	}
}

// wholeImage computes a request the way the engine did before it streamed:
// each step over the whole image before the next (the source to floats,
// deblock, denoise, linear light, the upscaling pass and its detail mask,
// the final resample, sharpen), with the engine's own per-pixel kernels.
// Streaming must not change what those steps compute.
func wholeImage(t *testing.T, req json.RawMessage, input []byte) *image.NRGBA {
	e := decodedJob(t, context.Background(), req, input, func(engine.Update) error { return nil })
	p, g, r := e.plan, e.plan.geo, e.req
	src := e.pipe.source.src
	row := func(pix []float32, w, y int) []float32 { return pix[4*w*y : 4*w*(y+1)] }
	w, h := src.w, src.h
	img := make([]float32, 4*w*h)
	for y := range h {
		src.encoded(row(img, w, y), 0, y)
	}
	if a := float32(r.FixCompression); a > 0 {
		for y := range h {
			deblockRow(row(img, w, y), 0, w, a)
		}
		for b := jpegBlock; b+1 < h; b += jpegBlock {
			for x := range w {
				deblockEdge(img, 4*(b*w+x), 4*w, min(h-b, 4), a)
			}
		}
	}
	if r.Denoise > 0 {
		luma := make([]float32, w*h)
		for y := range h {
			encodedLuma(luma[y*w:(y+1)*w], row(img, w, y))
		}
		var cols [denoiseSide][]int32
		for j := range cols {
			for x := range w {
				cols[j] = append(cols[j], int32(min(max(x+j-denoiseRadius, 0), w-1)))
			}
		}
		out := make([]float32, len(img))
		for y := range h {
			var rows, lumas [denoiseSide][]float32
			for i := range denoiseSide {
				ny := min(max(y+i-denoiseRadius, 0), h-1)
				rows[i], lumas[i] = row(img, w, ny), luma[ny*w:(ny+1)*w]
			}
			referenceDenoiseRow(row(out, w, y), &rows, &lumas, &cols, denoiseInvRange(r.Denoise))
		}
		img = out
	}
	for i := 0; i < len(img); i += 4 {
		toLinearPixel(img[i : i+4])
	}
	resample := func(pix []float32, w, h, outW, outH int, winX, winY window, clamp bool) []float32 {
		kx, ky := newKernel(w, outW, winX), newKernel(h, outH, winY)
		across := make([]float32, 4*outW*h)
		for y := range h {
			kx.resampleRow(row(across, outW, y), row(pix, w, y))
		}
		out := make([]float32, 4*outW*outH)
		for y := range outH {
			ky.combine(row(out, outW, y), y, func(j int) []float32 { return row(across, outW, j) })
		}
		if clamp {
			for i := 0; i < len(out); i += 4 {
				clampPixel(out[i : i+4])
			}
		}
		return out
	}
	sharpen := func(pix []float32, w, h int, sigma, gain float64) { // clamped: the old way
		mask, blurred, luma := gaussian(sigma), make([]float32, w*h), make([]float32, w)
		for y := range h {
			blurRow(blurred[y*w:(y+1)*w], row(pix, w, y), luma, mask)
		}
		rad := len(mask) / 2
		for y := range h {
			acc := make([]float32, w)
			for t, wt := range mask {
				j := min(max(y+t-rad, 0), h-1)
				addScaled(acc, blurred[j*w:(j+1)*w], wt)
			}
			sharpenApply(row(pix, w, y), acc, float32(gain), true)
		}
	}
	winX, winY := g.winX, g.winY
	if p.upW > 0 {
		img = resample(img, w, h, p.upW, p.upH, winX, winY, true)
		if r.Strength > 0 {
			sharpen(img, p.upW, p.upH, sharpenSigma(p.upscale()), r.Strength*maxSharpenGain)
		}
		w, h = p.upW, p.upH
		winX, winY = window{0, float64(w)}, window{0, float64(h)}
	}
	img = resample(img, w, h, g.placeW, g.placeH, winX, winY, false)
	if r.Sharpen > 0 {
		sharpen(img, g.placeW, g.placeH, sharpenSigma(p.finalScale()), r.Sharpen*maxSharpenGain)
	}
	out := image.NewNRGBA(image.Rect(0, 0, g.outW, g.outH))
	for y := range g.placeH {
		for x := range g.placeW {
			q := out.Pix[out.PixOffset(g.placeX+x, g.placeY+y):]
			q[0], q[1], q[2], q[3] = to8(row(img, g.placeW, y)[4*x:4*x+4], false)
		}
	}
	return out
}

// Every filter and the upscaling pass compute, streamed, what they compute
// over whole images, to within an 8-bit step (the float sums run in
// another order).
func TestEnhanceFiltersStreamAsWholeImages(t *testing.T) {
	blocky := jpegBytes(photo(90, 70), 20)
	for _, o := range []map[string]any{
		{"sharpen": 0.8, "denoise": 0.6, "fix_compression": 1},
		{"sharpen": 1, "denoise": 1, "fix_compression": 0.5, "crop_to_fill": true, "upscaling_activated": true, "image_scaling_factor": 2, "strength": 1},
		{"denoise": 1, "upscaling_activated": true, "image_scaling_factor": 3, "strength": 0.7},
		{"fix_compression": 1, "sharpen": 0.3},
	} {
		for _, size := range [][2]int{{230, 170}, {60, 120}, {41, 29}, {360, 280}} {
			o["output_format"] = "png"
			req := request(size[0], size[1], o)
			got, _ := enhance(t, req, blocky)
			if d := maxPremultipliedDiff(t, got, wholeImage(t, req, blocky)); d > 1 {
				t.Errorf("%v at %v: differs from the whole-image steps by up to %d of 255", o, size, d)
			}
		}
	}
}

// decodedJob is an enhance job of req on input, decoded and ready to fill.
func decodedJob(t testing.TB, ctx context.Context, req json.RawMessage, input []byte, report engine.Report) *enhanceJob {
	t.Helper()
	e, err := newEnhanceJob(ctx, job(req, input), report)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.decode(); err != nil {
		t.Fatal(err)
	}
	return e
}

// A row comes out the same whatever strips the encoder asks for, in any
// order, from any number of goroutines: the halos around a strip are right,
// every filter and the upscaling pass included.
func TestEnhanceRowsDoNotDependOnStrips(t *testing.T) {
	input := jpegBytes(photo(90, 70), 20) // blocky: deblocking has work
	all := map[string]any{"sharpen": 0.8, "denoise": 0.6, "fix_compression": 1}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range all {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	reqs := map[string]json.RawMessage{
		"enlarge, crop, upscaling pass":  request(250, 160, with(map[string]any{"crop_to_fill": true, "upscaling_activated": true, "image_scaling_factor": 2})),
		"enlarge, fit":                   request(160, 200, all),
		"enlarge 4x, shared source rows": request(360, 280, all),
		"shrink":                         request(40, 31, all),
	}
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			g := decodedJob(t, context.Background(), req, input, func(engine.Update) error { return nil }).plan.geo
			fillAll := func(strips [][2]int, goroutines int) []uint8 {
				// A job of its own: its chains start cold.
				e := decodedJob(t, context.Background(), req, input, func(engine.Update) error { return nil })
				m := image.NewNRGBA(image.Rect(0, 0, g.outW, g.outH))
				var next atomic.Int64
				var wg sync.WaitGroup
				for range goroutines {
					wg.Go(func() {
						for i := int(next.Add(1) - 1); i < len(strips); i = int(next.Add(1) - 1) {
							s := strips[i]
							if err := e.fillNRGBA(m.SubImage(image.Rect(0, s[0], g.outW, s[1])).(*image.NRGBA)); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				return m.Pix
			}
			whole := fillAll([][2]int{{0, g.outH}}, 1)
			var single, sevens [][2]int
			for y := g.outH - 1; y >= 0; y-- {
				single = append(single, [2]int{y, y + 1}) // bottom up: no halo is ever warm
			}
			for y := 0; y < g.outH; y += 7 {
				sevens = append(sevens, [2]int{y, min(y+7, g.outH)})
			}
			for _, c := range []struct {
				name       string
				strips     [][2]int
				goroutines int
			}{{"single rows bottom up", single, 1}, {"7-row strips on 3 goroutines", sevens, 3}} {
				if got := fillAll(c.strips, c.goroutines); !bytes.Equal(got, whole) {
					t.Errorf("%s: the output differs from the one-strip output", c.name)
				}
			}
		})
	}
}

// Streaming holds a few rows a worker, not images: filling a 2400 x 2400
// output (23 MB at 8 bits; the engine used to hold that and a float copy of
// the source) allocates a small fraction of it, with every filter and the
// upscaling pass on. Allocation, counted exactly, bounds the peak heap.
func TestEnhanceStreamsInBoundedMemory(t *testing.T) {
	const side, workers, strip = 2400, 2, 64
	e := decodedJob(t, context.Background(), request(side, side, map[string]any{
		"sharpen": 0.5, "denoise": 0.5, "fix_compression": 0.5, "upscaling_activated": true, "image_scaling_factor": 2,
	}), jpegBytes(photo(240, 240), 85), func(engine.Update) error { return nil })
	whole := uint64(side * side * 4)
	bufs := make([]*image.NRGBA, workers) // the encoder's strips, reused
	for i := range bufs {
		bufs[i] = image.NewNRGBA(image.Rect(0, 0, side, strip))
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, buf := range bufs {
		wg.Go(func() {
			for y := int(next.Add(strip) - strip); y < side; y = int(next.Add(strip) - strip) {
				buf.Rect = image.Rect(0, y, side, min(y+strip, side))
				if err := e.fillNRGBA(buf); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("filling %d x %d allocated %d KiB (%.1f%% of the 8-bit output)", side, side, allocated>>10, 100*float64(allocated)/float64(whole))
	if allocated > whole/8 {
		t.Errorf("filling allocated %d B, over an eighth of the %d B output", allocated, whole)
	}
}

// Once a report is refused, no strip computes another row beyond those
// already under way, and Run returns that refusal; likewise once ctx ends.
func TestEnhanceComputesNothingAfterAStop(t *testing.T) {
	input := jpegBytes(photo(120, 90), 80)
	req := request(480, 360, map[string]any{"sharpen": 0.5, "denoise": 0.5, "upscaling_activated": true, "image_scaling_factor": 2})
	stop := errors.New("job taken over")
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for _, how := range []string{"report", "ctx"} {
			ctx, cancel := context.WithCancel(context.Background())
			var e *enhanceJob
			var calls int
			var atStop int64 = -1
			e = decodedJob(t, ctx, req, input, func(engine.Update) error {
				if calls++; calls < 20 || atStop >= 0 {
					return nil
				}
				atStop = e.rowsDone.Load()
				if how == "ctx" {
					cancel()
					return nil
				}
				return stop
			})
			files, err := e.write(nil)
			want := stop
			if how == "ctx" {
				want = context.Canceled
			}
			if !errors.Is(err, want) || files != nil {
				t.Errorf("%d procs, stopped by %s: err = %v, %d files", procs, how, err, len(files))
			}
			// Other workers may finish the row they are on, and, racing the
			// refusal's record, the rows before their next report.
			limit := int64(procs-1) * progressRows
			if how == "ctx" {
				limit = int64(procs - 1)
			}
			if atStop < 0 || e.rowsDone.Load()-atStop > limit {
				t.Errorf("%d procs, stopped by %s at row %d: %d rows done by the end, want at most %d more",
					procs, how, atStop, e.rowsDone.Load(), limit)
			}
			cancel()
		}
		runtime.GOMAXPROCS(prev)
	}
}

// recordingSink keeps what an engine writes through Job.Outputs.
type recordingSink struct{ files []*recordedFile }

type recordedFile struct {
	contentType, ext string
	bytes.Buffer
	closed bool
}

func (s *recordingSink) Create(contentType, ext string) (io.WriteCloser, error) {
	f := &recordedFile{contentType: contentType, ext: ext}
	s.files = append(s.files, f)
	return f, nil
}

func (f *recordedFile) Close() error { f.closed = true; return nil }

// With Job.Outputs set, the file goes through it and Run returns none; a
// stopped job leaves its file unclosed, for the sink's owner to discard.
func TestEnhanceWritesThroughTheSink(t *testing.T) {
	input := jpegBytes(photo(64, 48), 80)
	for _, format := range []string{"jpg", "png", "webp"} {
		sink := &recordingSink{}
		j := job(request(200, 150, map[string]any{"output_format": format}), input)
		j.Outputs = sink
		files, err := Engine{}.Run(context.Background(), j, func(engine.Update) error { return nil })
		if err != nil || files != nil {
			t.Fatalf("%s: Run = %d files, %v; want none, nil", format, len(files), err)
		}
		if len(sink.files) != 1 || !sink.files[0].closed {
			t.Fatalf("%s: the sink got %d files, the first closed: %v", format, len(sink.files), len(sink.files) > 0 && sink.files[0].closed)
		}
		f := sink.files[0]
		m := decodeFile(t, engine.File{ContentType: f.contentType, Ext: f.ext, Data: f.Bytes()})
		if m.Bounds().Dx() != 200 || m.Bounds().Dy() != 150 || f.ext != outputFormats[format].ext {
			t.Errorf("%s: the file is a %v .%s", format, m.Bounds().Size(), f.ext)
		}
	}

	stop := errors.New("cancelled")
	sink := &recordingSink{}
	j := job(request(400, 300, nil), input)
	j.Outputs = sink
	calls := 0
	_, err := Engine{}.Run(context.Background(), j, func(engine.Update) error {
		if calls++; calls > 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v, want the refusal", err)
	}
	if len(sink.files) > 1 || len(sink.files) == 1 && sink.files[0].closed {
		t.Errorf("a stopped job closed its file")
	}
}

// referenceDenoiseRow is the bilateral filter as the engine first computed
// it, the reference of its faster denoiseRow: it filters one row into dst: rows and lumas are the five rows
// around it (edge rows repeated past the image's ends) and their
// luminances; cols[j][x] is the index, in those rows, of the neighbour
// j-2 pixels from output pixel x (edge pixels repeated).
func referenceDenoiseRow(dst []float32, rows, lumas *[denoiseSide][]float32, cols *[denoiseSide][]int32, invRange float32) {
	for x := range len(dst) / 4 {
		first := int(cols[0][x])
		var r, g, b, a, sum float32
		if int(cols[denoiseSide-1][x]) == first+denoiseSide-1 {
			// Five neighbours side by side, as everywhere but at the image's
			// left and right ends.
			centre := lumas[denoiseRadius][first+denoiseRadius]
			for i := range denoiseSide {
				l := lumas[i][first : first+denoiseSide : first+denoiseSide]
				px := rows[i][4*first : 4*(first+denoiseSide) : 4*(first+denoiseSide)]
				sp := denoiseSpaceWeights[i*denoiseSide : (i+1)*denoiseSide : (i+1)*denoiseSide]
				for j, v := range l {
					d := v - centre
					t := d * d * invRange
					if !(t < rangeLimit) {
						continue
					}
					wt := sp[j] * rangeTable[int(t*rangeSteps)]
					p := px[4*j : 4*j+4 : 4*j+4]
					r += wt * p[0]
					g += wt * p[1]
					b += wt * p[2]
					a += wt * p[3]
					sum += wt
				}
			}
		} else {
			centre := lumas[denoiseRadius][cols[denoiseRadius][x]]
			for i := range denoiseSide {
				srow, lrow := rows[i], lumas[i]
				sp := denoiseSpaceWeights[i*denoiseSide : (i+1)*denoiseSide : (i+1)*denoiseSide]
				for j := range denoiseSide {
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
		}
		// The centre always counts (weight 1), so sum > 0.
		inv := 1 / sum
		setPixel(dst[4*x:4*x+4], r*inv, g*inv, b*inv, a*inv)
	}
}

// The rows shared by the workers' chains stay a bounded window behind the
// furthest one: older rows are dropped (a chain that needs one again
// computes it), and each row held reads back as it was put.
func TestSharedRowsKeepABoundedWindow(t *testing.T) {
	s := newSharedRows(4, 3)
	row := func(v float32) []float32 { return []float32{v, v + 0.25, v + 0.5, v + 0.75} }
	for y := range 6 {
		s.put(y, row(float32(y)))
	}
	dst := make([]float32, 4)
	for y := range 6 {
		held := s.get(y, dst)
		if want := y >= 3; held != want {
			t.Errorf("row %d held: %v, want %v", y, held, want)
		}
		if held && !slices.Equal(dst, row(float32(y))) {
			t.Errorf("row %d reads back as %v", y, dst)
		}
	}
	s.put(1, row(9))
	if s.get(1, dst) || len(s.rows) != 3 {
		t.Errorf("a row behind the window was taken: %d rows held", len(s.rows))
	}
}

// The encoded input is not held while the output is made: a large source's
// file (several MiB) would otherwise add to the peak of every job. Once
// decoded, the engine keeps no reference to it and runs a collection,
// which takes it before the first byte of the output is written.
func TestEnhanceLetsGoOfTheInputOnceDecoded(t *testing.T) {
	collected := make(chan struct{})
	sink := &waitingSink{collected: collected}
	runWithInputOf(t, sink, collected)
	if !sink.sawCollected {
		t.Error("the encoded input was still held when the output was created")
	}
}

// runWithInputOf runs a job whose input only the job holds, with a
// finalizer closing collected once the input is garbage.
//
//go:noinline
func runWithInputOf(t *testing.T, sink engine.Sink, collected chan struct{}) {
	enc := jpegBytes(photo(64, 48), 80)
	input := make([]byte, len(enc)) // an allocation of its own, for the finalizer
	copy(input, enc)
	runtime.SetFinalizer(&input[0], func(*byte) { close(collected) })
	j := job(request(200, 150, nil), input)
	j.Outputs = sink
	input, enc = nil, nil
	if _, err := (Engine{}).Run(context.Background(), j, func(engine.Update) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// waitingSink records whether, when the file is created, the input has
// been collected: it waits (a generous bound, no timing assertion) for the
// finalizer, which runs after a collection, and runs none itself.
type waitingSink struct {
	recordingSink
	collected    chan struct{}
	sawCollected bool
}

func (s *waitingSink) Create(contentType, ext string) (io.WriteCloser, error) {
	select {
	case <-s.collected:
		s.sawCollected = true
	case <-time.After(5 * time.Second):
	}
	return s.recordingSink.Create(contentType, ext)
}

// A translucent source's filters (denoise sums alpha too: its own path)
// stream as they compute over whole images, to within an 8-bit step.
func TestEnhanceFiltersStreamAsWholeImagesWithAlpha(t *testing.T) {
	input := pngBytes(translucent(90, 70))
	for _, size := range [][2]int{{230, 170}, {41, 29}, {360, 280}} {
		req := request(size[0], size[1], map[string]any{"sharpen": 0.8, "denoise": 1, "fix_compression": 1, "output_format": "png"})
		got, _ := enhance(t, req, input)
		if d := maxPremultipliedDiff(t, got, wholeImage(t, req, input)); d > 1 {
			t.Errorf("%v: differs from the whole-image steps by up to %d of 255", size, d)
		}
	}
}
