package generate

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"testing"

	"genjobs/internal/engine"
)

// videoRun runs Video and decodes its GIF.
func videoRun(t *testing.T, model string, req map[string]any, inputs ...engine.Input) (*gif.GIF, []engine.Update) {
	t.Helper()
	files, updates := genRun(t, Video{}, engine.Job{Model: model, Request: genRequest(req), Inputs: inputs})
	f := files[0]
	if f.ContentType != "image/gif" || f.Ext != "gif" {
		t.Fatalf("output is %s (.%s), want image/gif (.gif)", f.ContentType, f.Ext)
	}
	g, err := gif.DecodeAll(bytes.NewReader(f.Data))
	if err != nil {
		t.Fatalf("output does not decode as a GIF: %v", err)
	}
	return g, updates
}

// videoNear reports whether pixel (x, y) of m is within 40 of c on every
// channel.
func videoNear(m image.Image, x, y int, c color.RGBA) bool {
	got := nrgba(m, x, y)
	for _, d := range []int{int(got.R) - int(c.R), int(got.G) - int(c.G), int(got.B) - int(c.B)} {
		if d > 40 || d < -40 {
			return false
		}
	}
	return true
}

// videoHalves is a 4:3 picture, red on the left and blue on the right.
func videoHalves() image.Image {
	m := genSolid(160, 120, videoRed)
	blue := genSolid(80, 120, videoBlue)
	for y := range 120 {
		copy(m.Pix[y*m.Stride+4*80:], blue.Pix[y*blue.Stride:y*blue.Stride+4*80])
	}
	return m
}

var (
	videoRed    = color.RGBA{220, 30, 30, 255}
	videoBlue   = color.RGBA{30, 60, 220, 255}
	videoYellow = color.RGBA{240, 220, 40, 255}
)

// Every model makes a looping GIF of VideoFPS frames a second that plays
// for exactly the duration, at its frame size; a start image is the first
// frame, an end image the last; the first frame is reported, as a PNG, as
// the one preview while the rest is still being made.
func TestVideoFramesDelaysAndPreview(t *testing.T) {
	start := genPNGInput("start_image", 0, videoHalves())
	end := engine.Input{Field: "end_image", ContentType: "image/jpeg", Data: jpegBytes(genSolid(90, 160, videoYellow), 95)}
	tests := []struct {
		name          string
		model         string
		req           map[string]any
		inputs        []engine.Input
		width, height int
	}{
		{"b-fast from the prompt", "model-b-fast",
			map[string]any{"prompt": "a kite over dunes", "resolution": "480p", "aspect_ratio": "1:1", "duration": 4},
			nil, 480, 480},
		{"b-fast from start to end", "model-b-fast",
			map[string]any{"prompt": "a kite over dunes", "resolution": "480p", "aspect_ratio": "1:1", "duration": 4, "seed": 9},
			[]engine.Input{start, end}, 480, 480},
		{"c from a start image", "model-c",
			map[string]any{"prompt": "a kite over dunes", "aspect_ratio": "1280:720", "duration": 2, "seed": 9},
			[]engine.Input{start}, 1280, 720},
		{"d-flash portrait from a start image", "model-d-flash-1.1",
			map[string]any{"prompt": "a kite over dunes", "aspect_ratio": "9:16", "duration": 3, "seed": 9},
			[]engine.Input{start}, 720, 1280},
		{"f from the prompt", "model-f-2.2",
			map[string]any{"prompt": "a kite over dunes", "width": 128, "height": 72, "aspect_ratio": "16:9", "duration": 2, "seed": 9},
			nil, 128, 72},
		{"f from a start image, 5 s", "model-f-2.2",
			map[string]any{"prompt": "a kite over dunes", "width": 200, "height": 300, "duration": 5, "seed": 9},
			[]engine.Input{start}, 200, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, updates := videoRun(t, tt.model, tt.req, tt.inputs...)
			duration := tt.req["duration"].(int)
			if got, want := len(g.Image), duration*VideoFPS; got != want {
				t.Errorf("%d frames, want %d", got, want)
			}
			played := 0
			for _, d := range g.Delay {
				played += d
			}
			if played != 100*duration {
				t.Errorf("plays for %d/100 s, want %d s", played, duration)
			}
			if g.LoopCount != 0 {
				t.Errorf("LoopCount %d, want 0 (for ever)", g.LoopCount)
			}
			size := image.Rect(0, 0, tt.width, tt.height)
			if g.Config.Width != tt.width || g.Config.Height != tt.height {
				t.Errorf("the GIF is %d x %d, want %d x %d", g.Config.Width, g.Config.Height, tt.width, tt.height)
			}
			for i, m := range g.Image {
				if m.Bounds() != size {
					t.Fatalf("frame %d is %v, want %v", i, m.Bounds(), size)
				}
			}
			first, last := g.Image[0], g.Image[len(g.Image)-1]
			if maxPremultipliedDiff(t, first, last) < 16 {
				t.Error("the last frame looks like the first: nothing moves")
			}

			var previews []int
			for i, u := range updates {
				if u.Preview != nil {
					previews = append(previews, i)
				}
			}
			if len(previews) != 1 {
				t.Fatalf("%d previews, want 1", len(previews))
			}
			p := updates[previews[0]]
			if p.Preview.ContentType != "image/png" || p.Preview.Ext != "png" {
				t.Errorf("preview is %s (.%s), want image/png", p.Preview.ContentType, p.Preview.Ext)
			}
			pm, err := png.Decode(bytes.NewReader(p.Preview.Data))
			if err != nil {
				t.Fatalf("preview does not decode as PNG: %v", err)
			}
			if d := maxPremultipliedDiff(t, pm, first); d != 0 {
				t.Errorf("the preview differs from the first frame by %d", d)
			}
			if p.Progress >= updates[len(updates)-1].Progress {
				t.Errorf("the preview came with the last report (progress %v)", p.Progress)
			}

			w, h := tt.width, tt.height
			for _, in := range tt.inputs {
				switch in.Field {
				case "start_image":
					if !videoNear(first, w/4, h/2, videoRed) || !videoNear(first, 3*w/4, h/2, videoBlue) {
						t.Errorf("first frame shows %v on the left and %v on the right, want the start image's %v and %v",
							nrgba(first, w/4, h/2), nrgba(first, 3*w/4, h/2), videoRed, videoBlue)
					}
				case "end_image":
					for _, x := range []int{w / 4, w / 2, 3 * w / 4} {
						if !videoNear(last, x, h/2, videoYellow) {
							t.Errorf("last frame at (%d, %d) is %v, want the end image's %v", x, h/2, nrgba(last, x, h/2), videoYellow)
						}
					}
				}
			}
		})
	}
}

// The frame size of every size a request can ask for.
func TestVideoFrameSizeTable(t *testing.T) {
	tests := []struct {
		model string
		req   genVideoRequest
		w, h  int
	}{
		{"model-b-fast", genVideoRequest{Resolution: "480p", AspectRatio: "16:9"}, 854, 480},
		{"model-b-fast", genVideoRequest{Resolution: "480p", AspectRatio: "4:3"}, 640, 480},
		{"model-b-fast", genVideoRequest{Resolution: "480p", AspectRatio: "1:1"}, 480, 480},
		{"model-b-fast", genVideoRequest{Resolution: "480p", AspectRatio: "3:4"}, 480, 640},
		{"model-b-fast", genVideoRequest{Resolution: "480p", AspectRatio: "9:16"}, 480, 854},
		{"model-b-fast", genVideoRequest{Resolution: "480p", AspectRatio: "21:9"}, 1120, 480},
		{"model-b-fast", genVideoRequest{Resolution: "720p", AspectRatio: "16:9"}, 1280, 720},
		{"model-b-fast", genVideoRequest{Resolution: "720p", AspectRatio: "4:3"}, 960, 720},
		{"model-b-fast", genVideoRequest{Resolution: "720p", AspectRatio: "1:1"}, 720, 720},
		{"model-b-fast", genVideoRequest{Resolution: "720p", AspectRatio: "3:4"}, 720, 960},
		{"model-b-fast", genVideoRequest{Resolution: "720p", AspectRatio: "9:16"}, 720, 1280},
		{"model-b-fast", genVideoRequest{Resolution: "720p", AspectRatio: "21:9"}, 1680, 720},
		{"model-c", genVideoRequest{AspectRatio: "1280:720"}, 1280, 720},
		{"model-c", genVideoRequest{AspectRatio: "720:1280"}, 720, 1280},
		{"model-c", genVideoRequest{AspectRatio: "1104:832"}, 1104, 832},
		{"model-c", genVideoRequest{AspectRatio: "832:1104"}, 832, 1104},
		{"model-c", genVideoRequest{AspectRatio: "960:960"}, 960, 960},
		{"model-c", genVideoRequest{AspectRatio: "1584:672"}, 1584, 672},
		{"model-c", genVideoRequest{AspectRatio: "672:1584"}, 672, 1584},
		{"model-d-flash-1.1", genVideoRequest{AspectRatio: "16:9"}, 1280, 720},
		{"model-d-flash-1.1", genVideoRequest{AspectRatio: "9:16"}, 720, 1280},
		{"model-f-2.2", genVideoRequest{Width: 64, Height: 2048}, 64, 2048},
		{"model-f-2.2", genVideoRequest{Width: 1366, Height: 768, AspectRatio: "16:9"}, 1366, 768},
	}
	for _, tt := range tests {
		w, h, err := videoFrameSize(tt.model, tt.req)
		if err != nil || w != tt.w || h != tt.h {
			t.Errorf("%s %+v: %d x %d (%v), want %d x %d", tt.model, tt.req, w, h, err, tt.w, tt.h)
		}
	}
	for model, req := range map[string]genVideoRequest{
		"model-b-fast":      {Resolution: "1080p", AspectRatio: "16:9"},
		"model-c":           {AspectRatio: "16:9"},
		"model-d-flash-1.1": {AspectRatio: "4:3"},
		"model-e-4":         {Width: 64, Height: 64},
	} {
		if w, h, err := videoFrameSize(model, req); err == nil {
			t.Errorf("%s %+v: %d x %d, want an error", model, req, w, h)
		}
	}
}

// A request without a seed gets the fixed default (the same video every
// time); another seed or prompt gives another video.
func TestVideoSeed(t *testing.T) {
	req := func(prompt string, seed any) map[string]any {
		r := map[string]any{"prompt": prompt, "width": 96, "height": 64, "duration": 2}
		if seed != nil {
			r["seed"] = seed
		}
		return r
	}
	bytesOf := func(r map[string]any) []byte {
		files, _ := genRun(t, Video{}, engine.Job{Model: "model-f-2.2", Request: genRequest(r)})
		return files[0].Data
	}
	absent := bytesOf(req("a kite", nil))
	if !bytes.Equal(absent, bytesOf(req("a kite", DefaultSeed))) {
		t.Errorf("no seed differs from seed %d", DefaultSeed)
	}
	if bytes.Equal(absent, bytesOf(req("a kite", 1))) {
		t.Error("seeds 1 and 1337 gave the same video")
	}
	if bytes.Equal(absent, bytesOf(req("a kite!", nil))) {
		t.Error("another prompt gave the same video")
	}
}

// Reference images give a video made from the prompt their colours.
func TestVideoReferenceImagesSetThePalette(t *testing.T) {
	teal := color.RGBA{20, 150, 160, 255}
	g, _ := videoRun(t, "model-b-fast",
		map[string]any{"prompt": "a kite over dunes", "resolution": "480p", "aspect_ratio": "1:1", "duration": 4},
		genPNGInput("reference_images", 0, genSolid(64, 64, teal)),
		genPNGInput("reference_images", 1, genSolid(64, 64, color.RGBA{30, 170, 150, 255})))
	for _, i := range []int{0, len(g.Image) / 2, len(g.Image) - 1} {
		m := g.Image[i]
		n := 0
		for y := range m.Bounds().Dy() {
			for x := range m.Bounds().Dx() {
				if c := nrgba(m, x, y); c.G > c.R && c.B > c.R {
					n++
				}
			}
		}
		if share := float64(n) / float64(m.Bounds().Dx()*m.Bounds().Dy()); share < 0.95 {
			t.Errorf("frame %d: %.0f%% of the pixels are teal, want at least 95%%", i, 100*share)
		}
	}
}
