package enhance

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"genjobs/internal/engine"
)

// With every filter off and the output at the source's size, each input
// format comes out as the pixels its standard decoder sees: the engine read
// it right, alpha included.
func TestEnhanceDecodesEveryInputFormat(t *testing.T) {
	withAlpha := photo(48, 32)
	for i := range withAlpha.Pix {
		if i%4 == 3 {
			withAlpha.Pix[i] = uint8(i / 4 % 256) // every alpha from clear to opaque
		}
	}
	gray := image.NewGray(image.Rect(0, 0, 40, 30))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i * 7)
	}
	deep := image.NewNRGBA64(image.Rect(0, 0, 33, 17))
	for y := range 17 {
		for x := range 33 {
			deep.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 1985), uint16(y * 3855), 0x8000, 0xffff})
		}
	}
	deepOpaque := image.NewRGBA64(image.Rect(0, 0, 29, 13))
	deepGray := image.NewGray16(image.Rect(0, 0, 23, 19))
	for y := range 19 {
		for x := range 29 {
			deepOpaque.SetRGBA64(x, y, color.RGBA64{uint16(x * 2200), uint16(y * 4900), 0x4000, 0xffff})
			deepGray.SetGray16(x, y, color.Gray16{uint16(x*2000 + y*900)})
		}
	}
	paletted := image.NewPaletted(image.Rect(0, 0, 20, 20), color.Palette{color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 0, 255, 128}})
	for i := range paletted.Pix {
		paletted.Pix[i] = uint8(i % 3 % 2)
	}
	tests := []struct {
		name  string
		input []byte
	}{
		{"png rgb", pngBytes(photo(64, 40))},
		{"png with alpha", pngBytes(withAlpha)},
		{"png grey", pngBytes(gray)},
		{"png 16-bit", pngBytes(deep)},
		{"png 16-bit opaque", pngBytes(deepOpaque)},
		{"png 16-bit grey", pngBytes(deepGray)},
		{"png paletted", pngBytes(paletted)},
		{"jpeg 4:2:0", jpegBytes(photo(64, 40), 85)},
		{"jpeg grey", jpegBytes(gray, 85)},
		{"webp lossless with alpha", webpBytes(withAlpha)},
		{"webp lossy", readTestdata(t, "blue-purple-pink.lossy.webp")},
		{"webp lossy with alpha", readTestdata(t, "yellow_rose.lossy-with-alpha.webp")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			format, _, err := sniff(tt.input, "")
			if err != nil {
				t.Fatal(err)
			}
			want, err := format.Decode(bytes.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			size := want.Bounds().Size()
			got, _ := enhance(t, request(size.X, size.Y, nil), tt.input)
			if d := maxPremultipliedDiff(t, got, want); d > 1 {
				t.Errorf("output differs from the decoded input by up to %d of 255", d)
			}
		})
	}
}

// Every output_format gives a file of that format at exactly width x
// height, whatever the source's size and aspect.
func TestEnhanceOutputFormatAndSize(t *testing.T) {
	source := pngBytes(photo(60, 40))
	formats := []struct{ format, contentType, ext string }{
		{"png", "image/png", "png"},
		{"jpg", "image/jpeg", "jpg"},
		{"webp", "image/webp", "webp"},
	}
	sizes := []struct {
		width, height int
		crop          bool
	}{
		{240, 160, false}, // 4x, same aspect
		{31, 17, false},   // smaller, another aspect
		{100, 300, true},  // taller than the source
		{1, 1, true},
		{97, 5, false},
	}
	for _, f := range formats {
		for _, s := range sizes {
			req := request(s.width, s.height, map[string]any{
				"output_format": f.format, "crop_to_fill": s.crop, "sharpen": 0.5, "denoise": 0.5, "fix_compression": 0.5,
			})
			got, file := enhance(t, req, source)
			if file.ContentType != f.contentType || file.Ext != f.ext {
				t.Errorf("%s: file is %s .%s", f.format, file.ContentType, file.Ext)
			}
			if got.Bounds().Dx() != s.width || got.Bounds().Dy() != s.height {
				t.Errorf("%s %dx%d: output is %v", f.format, s.width, s.height, got.Bounds().Size())
			}
		}
	}
}

// A flat colour stays exactly that colour up to the output's edges, with
// every filter on, at every size and aspect (tiny ones too): resampling
// invents nothing at the borders.
func TestEnhanceFlatStaysFlat(t *testing.T) {
	want := color.NRGBA{200, 120, 40, 255}
	sources := [][2]int{{1, 1}, {2, 1}, {1, 3}, {9, 2}, {37, 23}}
	outputs := [][2]int{{1, 1}, {5, 3}, {2, 17}, {64, 64}}
	for _, src := range sources {
		flat := image.NewNRGBA(image.Rect(0, 0, src[0], src[1]))
		for i := 0; i < len(flat.Pix); i += 4 {
			copy(flat.Pix[i:], []uint8{want.R, want.G, want.B, want.A})
		}
		input := pngBytes(flat)
		for _, out := range outputs {
			req := request(out[0], out[1], map[string]any{
				"crop_to_fill": true, "sharpen": 1, "denoise": 1, "fix_compression": 1,
				"upscaling_activated": true, "image_scaling_factor": 3, "strength": 1,
			})
			got, _ := enhance(t, req, input)
			for y := range out[1] {
				for x := range out[0] {
					if c := nrgba(got, x, y); !near(c, want, 1) {
						t.Fatalf("%v source, %v output: pixel (%d,%d) is %v", src, out, x, y, c)
					}
				}
			}
		}
	}
}

// A 200x100 source: a red bar on its left fifth, a blue bar on its right
// fifth, green between.
func barred() *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, 200, 100))
	for y := range 100 {
		for x := range 200 {
			c := color.NRGBA{0, 200, 0, 255}
			switch {
			case x < 40:
				c = color.NRGBA{220, 0, 0, 255}
			case x >= 160:
				c = color.NRGBA{0, 0, 220, 255}
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

// crop_to_fill covers the output and cuts the overflow equally from both
// sides; without it the whole source fits, centred, and the rest is padded
// (transparent where the format has alpha, white in a JPEG).
func TestEnhanceCropOrFit(t *testing.T) {
	source := pngBytes(barred())
	red, green, blue := color.NRGBA{220, 0, 0, 255}, color.NRGBA{0, 200, 0, 255}, color.NRGBA{0, 0, 220, 255}
	clear, white := color.NRGBA{}, color.NRGBA{255, 255, 255, 255}
	type probe struct {
		x, y int
		want color.NRGBA
	}
	tests := []struct {
		name   string
		format string
		crop   bool
		probes []probe
	}{
		// Cover: the 100x100 output shows the middle 100x100 of the source,
		// all green: both bars are cut off.
		{"crop", "png", true, []probe{{0, 0, green}, {99, 0, green}, {0, 99, green}, {99, 99, green}, {50, 50, green}}},
		// Contain: the source is shrunk to 100x50 at rows 25..74; the bars
		// are 20 pixels wide.
		{"fit png", "png", false, []probe{
			{50, 10, clear}, {50, 90, clear}, {5, 30, red}, {5, 70, red}, {50, 50, green}, {94, 50, blue}, {17, 50, red}, {22, 50, green},
		}},
		{"fit webp", "webp", false, []probe{{50, 10, clear}, {50, 90, clear}, {5, 50, red}, {94, 50, blue}}},
		{"fit jpg", "jpg", false, []probe{{50, 10, white}, {50, 90, white}, {5, 50, red}, {50, 50, green}, {94, 50, blue}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := enhance(t, request(100, 100, map[string]any{"output_format": tt.format, "crop_to_fill": tt.crop}), source)
			for _, p := range tt.probes {
				if c := nrgba(got, p.x, p.y); !near(c, p.want, 12) {
					t.Errorf("pixel (%d,%d) = %v, want %v", p.x, p.y, c, p.want)
				}
			}
		})
	}
	// The padding starts exactly where the fitted source ends.
	got, _ := enhance(t, request(100, 100, map[string]any{"output_format": "png"}), source)
	for x := range 100 {
		if a := nrgba(got, x, 24).A; a != 0 {
			t.Fatalf("row 24 (padding) has alpha %d at x=%d", a, x)
		}
		if a := nrgba(got, x, 25).A; a != 255 {
			t.Fatalf("row 25 (source) has alpha %d at x=%d", a, x)
		}
	}
}

func near(a, b color.NRGBA, tolerance int) bool {
	for _, d := range []int{int(a.R) - int(b.R), int(a.G) - int(b.G), int(a.B) - int(b.B), int(a.A) - int(b.A)} {
		if d > tolerance || -d > tolerance {
			return false
		}
	}
	return true
}

// Enlarging a steep, smooth gradient gives the gradient itself, without the
// staircase of a cheap resize (nearest neighbour would be off by up to 4).
func TestEnhanceUpscaleFollowsTheGradient(t *testing.T) {
	source := pngBytes(grey(32, 8, func(x, _ int) float64 { return float64(8 * x) }))
	got, _ := enhance(t, request(128, 32, nil), source)
	worst := 0.0
	for x := range 128 {
		u := min(max((float64(x)+0.5)/4-0.5, 0), 31) // the source position of output pixel x
		worst = max(worst, math.Abs(lum(got, x, 16)-8*u))
	}
	if worst > 1.5 {
		t.Errorf("the enlarged gradient strays up to %.1f of 255 from the true one", worst)
	}
}

// Shrinking a fine black and white checkerboard gives an even grey as bright
// as the pattern looks from afar: half the light, sRGB 188. (Averaging the
// encoded values would give 128, visibly too dark.)
func TestEnhanceDownscaleAveragesLight(t *testing.T) {
	source := pngBytes(grey(256, 256, func(x, y int) float64 { return float64((x + y) % 2 * 255) }))
	for _, size := range []int{64, 37} {
		got, _ := enhance(t, request(size, size, nil), source)
		for y := range size {
			for x := range size {
				if v := lum(got, x, y); math.Abs(v-188) > 2 {
					t.Fatalf("%dx%d: pixel (%d,%d) is %.0f, want 188", size, size, x, y, v)
				}
			}
		}
	}
}

// A soft edge from 64 to 192 across the middle of a 64x16 image.
func softEdge() *image.NRGBA {
	return grey(64, 16, func(x, _ int) float64 { return 128 + 64*math.Tanh((float64(x)-31.5)/3) })
}

// edgeContrast is the difference across the soft edge's middle.
func edgeContrast(m image.Image) float64 { return lum(m, 33, 8) - lum(m, 30, 8) }

// Each filter changes the image in the direction its name promises, more so
// at a higher amount, and changes nothing at 0.
func TestEnhanceFilters(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := grey(64, 64, func(int, int) float64 { return 128 + rng.NormFloat64()*8 })
	noisyEdge := grey(64, 64, func(x, _ int) float64 {
		return map[bool]float64{true: 60, false: 190}[x < 32] + rng.NormFloat64()*6
	})
	blocky := jpegBytes(grey(128, 128, func(x, y int) float64 {
		return 128 + 90*math.Sin(float64(x)/19)*math.Cos(float64(y)/23)
	}), 10)

	tests := []struct {
		filter string
		input  []byte
		// measure is what the filter should lower (a higher amount lowers it more).
		measure func(image.Image) float64
		// keep, when set, is what the filter should leave within 10%.
		keep func(image.Image) float64
	}{
		{"sharpen", pngBytes(softEdge()), func(m image.Image) float64 { return -edgeContrast(m) }, nil},
		{"denoise", pngBytes(noisy), func(m image.Image) float64 { return variance(m, image.Rect(8, 8, 56, 56)) }, nil},
		{"denoise", pngBytes(noisyEdge), func(m image.Image) float64 { return variance(m, image.Rect(4, 4, 28, 60)) },
			func(m image.Image) float64 { return lum(m, 34, 32) - lum(m, 29, 32) }},
		{"fix_compression", blocky, blockiness, nil},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			format, _, err := sniff(tt.input, "")
			if err != nil {
				t.Fatal(err)
			}
			source, err := format.Decode(bytes.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			size := source.Bounds().Size()
			outputs := map[float64]image.Image{}
			for _, amount := range []float64{0, 0.5, 1} {
				outputs[amount], _ = enhance(t, request(size.X, size.Y, map[string]any{tt.filter: amount}), tt.input)
			}
			if d := maxPremultipliedDiff(t, outputs[0], source); d > 1 {
				t.Errorf("at 0 the image changes by up to %d of 255", d)
			}
			m0, m5, m1 := tt.measure(outputs[0]), tt.measure(outputs[0.5]), tt.measure(outputs[1])
			if !(m5 < m0 && m1 < m5) {
				t.Errorf("measure at 0, 0.5, 1: %.3f, %.3f, %.3f; want it falling", m0, m5, m1)
			}
			if tt.keep != nil {
				k0, k1 := tt.keep(outputs[0]), tt.keep(outputs[1])
				if math.Abs(k1-k0) > 0.1*math.Abs(k0) {
					t.Errorf("the edge went from %.1f to %.1f", k0, k1)
				}
			}
			t.Logf("measure at 0, 0.5, 1: %.3f, %.3f, %.3f", m0, m5, m1)
		})
	}
}

func variance(m image.Image, r image.Rectangle) float64 {
	var sum, sq, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			v := lum(m, x, y)
			sum += v
			sq += v * v
			n++
		}
	}
	mean := sum / n
	return sq/n - mean*mean
}

// blockiness is how much larger the steps across JPEG block boundaries are
// than the steps inside blocks.
func blockiness(m image.Image) float64 {
	var edge, inner, ne, ni float64
	b := m.Bounds()
	for y := 1; y < b.Dy(); y++ {
		for x := 1; x < b.Dx(); x++ {
			dx := math.Abs(lum(m, x, y) - lum(m, x-1, y))
			dy := math.Abs(lum(m, x, y) - lum(m, x, y-1))
			if x%8 == 0 {
				edge, ne = edge+dx, ne+1
			} else {
				inner, ni = inner+dx, ni+1
			}
			if y%8 == 0 {
				edge, ne = edge+dy, ne+1
			} else {
				inner, ni = inner+dy, ni+1
			}
		}
	}
	return (edge / ne) / (inner / ni)
}

// upscaling_activated never changes the output's size, even at a factor far
// beyond it, and its detail pass leaves a sharp edge crisper than a plain
// resize does.
func TestEnhanceUpscalingPass(t *testing.T) {
	source := pngBytes(grey(64, 16, func(x, _ int) float64 { return float64(64 + 128*(x/32)) }))
	plain, _ := enhance(t, request(256, 64, nil), source)
	for _, factor := range []float64{2, 4, 32} {
		got, _ := enhance(t, request(256, 64, map[string]any{
			"upscaling_activated": true, "image_scaling_factor": factor, "strength": 1,
		}), source)
		if got.Bounds().Dx() != 256 || got.Bounds().Dy() != 64 {
			t.Fatalf("factor %v: output is %v", factor, got.Bounds().Size())
		}
		// One source pixel either side of the edge, 4x enlarged.
		crisp, soft := lum(got, 131, 32)-lum(got, 124, 32), lum(plain, 131, 32)-lum(plain, 124, 32)
		if crisp <= soft {
			t.Errorf("factor %v: edge contrast %.1f, no more than without the pass (%.1f)", factor, crisp, soft)
		}
	}
}

// A broken or unwelcome input fails the job as invalid_input with a message
// the client can act on, and never crashes the worker.
func TestEnhanceRefusesBadInput(t *testing.T) {
	goodPNG := pngBytes(photo(64, 64))
	goodJPEG := jpegBytes(photo(64, 64), 80)
	goodWebP := webpBytes(photo(64, 64))
	lossyWebP := readTestdata(t, "blue-purple-pink.lossy.webp")
	corrupt := func(b []byte, at int) []byte {
		b = bytes.Clone(b)
		for i := at; i < at+16 && i < len(b); i++ {
			b[i] ^= 0x5a
		}
		return b
	}
	var gifData bytes.Buffer
	if err := gif.Encode(&gifData, photo(16, 16), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		input       []byte
		contentType string // when not the input's own
		req         map[string]any
		message     string
	}{
		{"empty", nil, "", nil, "not a decodable PNG, JPEG or WebP"},
		{"text", []byte("<html>not found</html>"), "", nil, "not a decodable PNG, JPEG or WebP"},
		{"gif", gifData.Bytes(), "", nil, "not a decodable PNG, JPEG or WebP"},
		{"png signature only", goodPNG[:8], "", nil, "PNG data is corrupt or truncated"},
		{"png truncated", goodPNG[:len(goodPNG)/2], "", nil, "PNG data is corrupt or truncated"},
		{"png corrupt", corrupt(goodPNG, len(goodPNG)/2), "", nil, "PNG data is corrupt or truncated"},
		{"jpeg truncated", goodJPEG[:len(goodJPEG)/2], "", nil, "JPEG data is corrupt or truncated"},
		{"jpeg header corrupt", corrupt(goodJPEG, 2), "", nil, "JPEG"},
		{"webp truncated", goodWebP[:len(goodWebP)/2], "", nil, "WebP data is corrupt or truncated"},
		{"webp corrupt", corrupt(goodWebP, 16), "", nil, "WebP data is corrupt or truncated"},
		// A RIFF WEBP file whose first chunk no WebP decoder reads is not
		// taken for a WebP image (imagetype.Sniff).
		{"webp foreign chunk", corrupt(goodWebP, 12), "", nil, "image_url is not a decodable PNG, JPEG or WebP image"},
		{"lossy webp truncated", lossyWebP[:len(lossyWebP)/2], "", nil, "WebP data is corrupt or truncated"},
		{"over the pixel cap", hugePNGHeader(16000, 16000), "", nil, "16000 x 16000 pixels; at most 200 megapixels"},
		// 40 GB of pixels behind a 33-byte header: refused before decoding.
		{"decompression bomb", hugePNGHeader(100000, 100000), "", nil, "100000 x 100000 pixels; at most 200 megapixels"},
		{"png given as jpeg", goodPNG, "image/jpeg", nil, "image_url was given as image/jpeg but holds PNG data"},
		{"jpeg given as webp", goodJPEG, "image/webp", nil, "image_url was given as image/webp but holds JPEG data"},
		{"output over 22000 x 22000", goodPNG, "", map[string]any{"width": 22001, "height": 22000}, "the output may hold at most 484000000 pixels"},
		{"webp output too wide", goodPNG, "", map[string]any{"output_format": "webp", "width": 16384}, "webp output may be at most 16383 pixels wide"},
		{"webp output too large", goodPNG, "", map[string]any{"output_format": "webp", "width": 9000, "height": 9000}, "and 67 megapixels in all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job(request(32, 32, tt.req), tt.input)
			if tt.contentType != "" {
				j.Inputs[0].ContentType = tt.contentType
			}
			files, err := Engine{}.Run(context.Background(), j, func(engine.Update) error { return nil })
			if !errors.Is(err, engine.ErrInvalidInput) {
				t.Fatalf("err = %v, want an invalid input", err)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("message %q, want it to say %q", err, tt.message)
			}
			if tt.req == nil && !strings.HasPrefix(err.Error(), "image_url ") {
				t.Errorf("message %q does not name image_url", err)
			}
			if files != nil {
				t.Errorf("files with an error: %d", len(files))
			}
		})
	}
}

// The rows of a job with many strips, to see progress and stops.
var stripJob = request(320, 240, map[string]any{"sharpen": 0.5, "denoise": 0.5, "fix_compression": 0.5, "upscaling_activated": true, "image_scaling_factor": 2})

// Progress rises at every report, stays inside (0, 1), and comes often.
func TestEnhanceProgressRises(t *testing.T) {
	var seen []float64
	_, err := Engine{}.Run(context.Background(), job(stripJob, jpegBytes(photo(160, 120), 80)), func(u engine.Update) error {
		seen = append(seen, u.Progress)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 20 {
		t.Errorf("only %d reports", len(seen))
	}
	for i, p := range seen {
		if !(p > 0 && p < 1) || i > 0 && p <= seen[i-1] {
			t.Fatalf("report %d: %v after %v", i, p, seen[:i])
		}
	}
}

// A report that refuses (the job was cancelled or taken over) stops the
// engine with that very error, whichever phase it comes in; so does a
// cancelled context.
func TestEnhanceStopsWhenTold(t *testing.T) {
	input := jpegBytes(photo(160, 120), 80)
	var total int
	if _, err := (Engine{}).Run(context.Background(), job(stripJob, input), func(engine.Update) error { total++; return nil }); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("job taken over")
	// The count of reports varies a little from run to run (the decoder's and
	// encoder's are timed), so stop well before the last.
	for _, n := range []int{1, total / 3, total * 2 / 3} {
		calls := 0
		files, err := Engine{}.Run(context.Background(), job(stripJob, input), func(engine.Update) error {
			calls++
			if calls >= n {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || files != nil {
			t.Errorf("refusing report %d of %d: err = %v, %d files", n, total, err, len(files))
		}
		if calls != n {
			t.Errorf("refusing report %d of %d: report called %d times", n, total, calls)
		}

		ctx, cancel := context.WithCancel(context.Background())
		calls = 0
		files, err = Engine{}.Run(ctx, job(stripJob, input), func(engine.Update) error {
			if calls++; calls >= n {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) || files != nil {
			t.Errorf("cancelled at report %d of %d: err = %v, %d files", n, total, err, len(files))
		}
		cancel()
	}
}

// The same request and input give the same bytes, on any number of cores.
func TestEnhanceIsDeterministic(t *testing.T) {
	input := jpegBytes(photo(160, 120), 80)
	for _, format := range []string{"png", "jpg", "webp"} {
		req := request(300, 200, map[string]any{
			"output_format": format, "sharpen": 0.7, "denoise": 0.3, "fix_compression": 0.6,
			"upscaling_activated": true, "image_scaling_factor": 1.5, "crop_to_fill": true,
		})
		var outputs [][]byte
		for _, procs := range []int{1, 3, 1} {
			prev := runtime.GOMAXPROCS(procs)
			_, file := enhance(t, req, input)
			runtime.GOMAXPROCS(prev)
			outputs = append(outputs, file.Data)
		}
		for i := 1; i < len(outputs); i++ {
			if !bytes.Equal(outputs[0], outputs[i]) {
				t.Errorf("%s: run %d differs from run 0", format, i)
			}
		}
	}
}
