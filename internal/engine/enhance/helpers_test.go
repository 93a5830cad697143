package enhance

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"maps"
	"math"
	"testing"

	"golang.org/x/image/webp"

	"genjobs/internal/engine"
	"genjobs/internal/engine/enginetest"
	"genjobs/internal/imagetype"
)

// request is a standard-enhance request with the schema's defaults, the
// given size, every filter off, and then the overrides.
func request(width, height int, overrides map[string]any) json.RawMessage {
	req := map[string]any{
		"prompt": "", "width": width, "height": height, "seed": 1337,
		"image_url": "https://example.com/in.png", "model": "Standard V2",
		"output_format": "png", "subject_detection": "All",
		"face_enhancement": false, "face_enhancement_creativity": 0.5, "face_enhancement_strength": 0.5,
		"crop_to_fill": false, "upscaling_activated": false, "image_scaling_factor": 1,
		"sharpen": 0, "denoise": 0, "fix_compression": 0, "strength": 0.5,
	}
	maps.Copy(req, overrides)
	raw, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return raw
}

func job(req json.RawMessage, input []byte) engine.Job {
	return engine.Job{
		Model:   "standard-enhance",
		Request: req,
		Inputs:  []engine.Input{{Field: "image_url", ContentType: contentTypeOf(input), Data: input}},
	}
}

// contentTypeOf is the type the worker gives an input: the one its bytes
// show, or none for bytes it would have refused.
func contentTypeOf(data []byte) string {
	ct, _ := imagetype.Sniff(data)
	return ct
}

// enhance runs the engine and decodes its one output, checking that the
// file is what it says it is.
func enhance(t testing.TB, req json.RawMessage, input []byte) (image.Image, engine.File) {
	t.Helper()
	files, err := Engine{}.Run(context.Background(), job(req, input), func(engine.Update) error { return nil })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(files) != 1 {
		t.Fatalf("Run gave %d files, want 1", len(files))
	}
	return decodeFile(t, files[0]), files[0]
}

func decodeFile(t testing.TB, f engine.File) image.Image {
	t.Helper()
	decoders := map[string]func([]byte) (image.Image, error){
		"image/png":  func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) },
		"image/jpeg": func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) },
		"image/webp": func(b []byte) (image.Image, error) { return webp.Decode(bytes.NewReader(b)) },
	}
	decode, ok := decoders[f.ContentType]
	if !ok {
		t.Fatalf("output content type %q", f.ContentType)
	}
	m, err := decode(f.Data)
	if err != nil {
		t.Fatalf("output does not decode as %s: %v", f.ContentType, err)
	}
	return m
}

// grey is an opaque greyscale image of f(x, y) in 0..255.
func grey(w, h int, f func(x, y int) float64) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint8(math.Round(min(max(f(x, y), 0), 255)))
			m.SetNRGBA(x, y, color.NRGBA{v, v, v, 255})
		}
	}
	return m
}

// lum is pixel (x, y)'s 8-bit sRGB value, the mean of its colour channels,
// unpremultiplied.
func lum(m image.Image, x, y int) float64 {
	c := color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
	return (float64(c.R) + float64(c.G) + float64(c.B)) / 3
}

// The helpers every engine's tests share, by the names these tests use.
var (
	pngBytes             = enginetest.PNGBytes
	jpegBytes            = enginetest.JPEGBytes
	webpBytes            = enginetest.WebPBytes
	photo                = enginetest.Photo
	nrgba                = enginetest.NRGBA
	maxPremultipliedDiff = enginetest.MaxPremultipliedDiff
	hugePNGHeader        = enginetest.HugePNGHeader
	readTestdata         = enginetest.Testdata
)
