package reference_test

import (
	"bytes"
	"context"
	"errors"
	"image/color"
	"image/gif"
	"runtime"
	"testing"

	"genjobs/internal/engine"
	"genjobs/internal/engine/enginetest"
	"genjobs/internal/engine/generate"
	"genjobs/internal/engine/mesh"
)

// Shared tests of the generation engines (model-e-4's Image, the video
// models' Video, model-g-3.1-rapid's Mesh): what every one of them promises
// the worker, on one small job each.

// genCase is one small generation job.
type genCase struct {
	name   string
	engine engine.Engine
	model  string
	req    map[string]any
	inputs []engine.Input
}

func (c genCase) job() engine.Job {
	return engine.Job{Model: c.model, Request: genRequest(c.req), Inputs: c.inputs}
}

// genCases are small jobs of every generation engine and every path
// through it, for the tests of what each promises the worker. (The video
// models differ only in their frame sizes, and model-c's and
// model-d-flash-1.1's are all near a megapixel: model-f-2.2's small frames
// stand for them here; video_test.go runs each model.)
func genCases() []genCase {
	orange := genSolid(40, 30, color.RGBA{200, 80, 40, 255})
	return []genCase{
		{
			name: "model-e-4", engine: generate.Image{}, model: "model-e-4",
			req:    map[string]any{"prompt": "a lighthouse at dusk", "width": 200, "height": 120, "seed": 7},
			inputs: []engine.Input{genPNGInput("style_images", 0, orange)},
		},
		{
			name: "model-f-2.2/prompt", engine: generate.Video{}, model: "model-f-2.2",
			req: map[string]any{"prompt": "a paper boat on a stream", "width": 96, "height": 96, "duration": 2, "seed": 3},
		},
		{
			name: "model-f-2.2/start_image", engine: generate.Video{}, model: "model-f-2.2",
			req:    map[string]any{"prompt": "a paper boat on a stream", "width": 128, "height": 72, "aspect_ratio": "16:9", "duration": 2, "seed": 3},
			inputs: []engine.Input{{Field: "start_image", ContentType: "image/jpeg", Data: jpegBytes(photo(160, 120), 85)}},
		},
		{
			name: "model-g-3.1-rapid/text", engine: mesh.Engine{}, model: "model-g-3.1-rapid",
			req: map[string]any{"mode": "text", "prompt": "a mossy boulder", "image_urls": []string{}},
		},
		{
			name: "model-g-3.1-rapid/image", engine: mesh.Engine{}, model: "model-g-3.1-rapid",
			req:    map[string]any{"mode": "image", "prompt": "", "image_urls": []string{"https://example.com/a.jpg"}},
			inputs: []engine.Input{{Field: "image_urls", ContentType: "image/jpeg", Data: jpegBytes(photo(400, 300), 85)}},
		},
	}
}

// genImageFields are the image fields of every generation model, each with
// a valid request that has it.
var genImageFields = []struct {
	engine engine.Engine
	model  string
	req    map[string]any
	field  string
}{
	{generate.Image{}, "model-e-4", map[string]any{"prompt": "p", "width": 64, "height": 64, "seed": 1}, "style_images"},
	{generate.Video{}, "model-b-fast", map[string]any{"prompt": "p", "resolution": "480p", "aspect_ratio": "1:1", "duration": 4}, "start_image"},
	{generate.Video{}, "model-b-fast", map[string]any{"prompt": "p", "resolution": "480p", "aspect_ratio": "1:1", "duration": 4}, "end_image"},
	{generate.Video{}, "model-b-fast", map[string]any{"prompt": "p", "resolution": "480p", "aspect_ratio": "1:1", "duration": 4}, "reference_images"},
	{generate.Video{}, "model-c", map[string]any{"prompt": "p", "aspect_ratio": "1280:720", "duration": 2}, "start_image"},
	{generate.Video{}, "model-d-flash-1.1", map[string]any{"prompt": "p", "aspect_ratio": "16:9", "duration": 3}, "start_image"},
	{generate.Video{}, "model-d-flash-1.1", map[string]any{"prompt": "p", "aspect_ratio": "16:9", "duration": 3}, "reference_images"},
	{generate.Video{}, "model-f-2.2", map[string]any{"prompt": "p", "width": 64, "height": 64, "duration": 2}, "start_image"},
	{mesh.Engine{}, "model-g-3.1-rapid", map[string]any{"mode": "image", "prompt": "", "image_urls": []string{"a", "b"}}, "image_urls"},
}

// arrayFields are the request fields whose inputs are named with an index.
var arrayFields = map[string]bool{"style_images": true, "reference_images": true, "image_urls": true}

// The helpers every engine's tests share, by the names these tests use.
var (
	genRequest    = enginetest.Request
	genPNGInput   = enginetest.PNGInput
	genSolid      = enginetest.Solid
	genRun        = enginetest.Run
	pngBytes      = enginetest.PNGBytes
	jpegBytes     = enginetest.JPEGBytes
	webpBytes     = enginetest.WebPBytes
	photo         = enginetest.Photo
	hugePNGHeader = enginetest.HugePNGHeader
	readTestdata  = enginetest.Testdata
)

// A corrupt, truncated or foreign file in any image field fails the job as
// invalid input, with a message that names the field, and never panics.
func TestGenRefusesBadImages(t *testing.T) {
	goodPNG := pngBytes(genSolid(32, 24, color.RGBA{10, 200, 30, 255}))
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
	const notImage = " is not a decodable PNG, JPEG or WebP image"
	bad := []struct {
		name    string
		data    []byte
		message string // after the field's name
	}{
		{"empty", nil, notImage},
		{"text", []byte("<html>not found</html>"), notImage},
		{"gif", gifData.Bytes(), notImage},
		{"png signature only", goodPNG[:8], notImage},
		{"png truncated", goodPNG[:len(goodPNG)/2], notImage},
		{"png corrupt", corrupt(goodPNG, len(goodPNG)/2), notImage},
		{"jpeg truncated", goodJPEG[:len(goodJPEG)/2], notImage},
		{"jpeg header corrupt", corrupt(goodJPEG, 2), notImage},
		{"webp truncated", goodWebP[:len(goodWebP)/2], notImage},
		{"webp corrupt", corrupt(goodWebP, 12), notImage},
		{"lossy webp truncated", lossyWebP[:len(lossyWebP)/2], notImage},
		{"over the pixel cap", hugePNGHeader(20000, 20000), " is 20000 x 20000 pixels; at most 100 megapixels are accepted"},
	}
	for _, f := range genImageFields {
		for _, b := range bad {
			t.Run(f.model+"/"+f.field+"/"+b.name, func(t *testing.T) {
				var inputs []engine.Input
				name := f.field
				if arrayFields[f.field] {
					inputs = append(inputs, engine.Input{Field: f.field, Index: 0, ContentType: "image/png", Data: goodPNG})
					name = f.field + "[1]"
				}
				inputs = append(inputs, engine.Input{Field: f.field, Index: len(inputs), ContentType: "image/png", Data: b.data})
				j := engine.Job{Model: f.model, Request: genRequest(f.req), Inputs: inputs}
				files, err := f.engine.Run(context.Background(), j, func(engine.Update) error { return nil })
				if !errors.Is(err, engine.ErrInvalidInput) {
					t.Fatalf("err = %v, want an invalid input", err)
				}
				if want := name + b.message; err.Error() != want {
					t.Errorf("message %q, want %q", err, want)
				}
				if files != nil {
					t.Errorf("%d files with an error", len(files))
				}
			})
		}
	}
}

// Progress rises (never falls) inside (0, 1): the worker reports 1 itself
// once the outputs are stored.
func TestGenProgressRises(t *testing.T) {
	for _, c := range genCases() {
		t.Run(c.name, func(t *testing.T) {
			_, updates := genRun(t, c.engine, c.job())
			if len(updates) < 3 {
				t.Errorf("only %d reports", len(updates))
			}
			for i, u := range updates {
				if !(u.Progress > 0 && u.Progress < 1) || i > 0 && u.Progress < updates[i-1].Progress {
					t.Fatalf("report %d: %v after %v", i, u.Progress, updates[max(i-1, 0)].Progress)
				}
			}
		})
	}
}

// A report that refuses (the job was cancelled or taken over) stops the
// engine with that very error and no further report, whichever phase it
// comes in; so does a cancelled context.
func TestGenStopsWhenTold(t *testing.T) {
	stop := errors.New("job taken over")
	for _, c := range genCases() {
		t.Run(c.name, func(t *testing.T) {
			_, updates := genRun(t, c.engine, c.job())
			total := len(updates)
			// The count varies a little from run to run (waits on a step
			// that cannot report are timed), so stop well before the last.
			for _, n := range []int{1, max(total/3, 2), max(total*2/3, 3)} {
				calls := 0
				files, err := c.engine.Run(context.Background(), c.job(), func(engine.Update) error {
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
				files, err = c.engine.Run(ctx, c.job(), func(engine.Update) error {
					if calls++; calls >= n {
						cancel()
					}
					return nil
				})
				cancel()
				if !errors.Is(err, context.Canceled) || files != nil {
					t.Errorf("cancelled at report %d of %d: err = %v, %d files", n, total, err, len(files))
				}
			}
		})
	}
}

// The same request and inputs give the same bytes, on any number of cores.
func TestGenIsDeterministic(t *testing.T) {
	for _, c := range genCases() {
		t.Run(c.name, func(t *testing.T) {
			var outputs [][]byte
			for _, procs := range []int{1, 3, 1} {
				prev := runtime.GOMAXPROCS(procs)
				files, _ := genRun(t, c.engine, c.job())
				runtime.GOMAXPROCS(prev)
				outputs = append(outputs, files[0].Data)
			}
			for i := 1; i < len(outputs); i++ {
				if !bytes.Equal(outputs[0], outputs[i]) {
					t.Errorf("run %d differs from run 0", i)
				}
			}
		})
	}
}
