package engine

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
	"math/rand/v2"
	"testing"

	"github.com/HugoSmits86/nativewebp"
	"golang.org/x/image/webp"
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

func job(req json.RawMessage, input []byte) Job {
	return Job{
		Model:   "standard-enhance",
		Request: req,
		Inputs:  []Input{{Field: "image_url", ContentType: contentTypeOf(input), Data: input}},
	}
}

// contentTypeOf is the type the worker gives an input: the one its bytes
// show, or none for bytes it would have refused.
func contentTypeOf(data []byte) string {
	for _, f := range sourceFormats {
		if f.magic(data) {
			return f.contentType
		}
	}
	return ""
}

// enhance runs the engine and decodes its one output, checking that the
// file is what it says it is.
func enhance(t testing.TB, req json.RawMessage, input []byte) (image.Image, File) {
	t.Helper()
	files, err := Enhance{}.Run(context.Background(), job(req, input), func(Update) error { return nil })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(files) != 1 {
		t.Fatalf("Run gave %d files, want 1", len(files))
	}
	return decodeFile(t, files[0]), files[0]
}

func decodeFile(t testing.TB, f File) image.Image {
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

func pngBytes(m image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func jpegBytes(m image.Image, quality int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: quality}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func webpBytes(m image.Image) []byte {
	var b bytes.Buffer
	if err := nativewebp.Encode(&b, m, nil); err != nil {
		panic(err)
	}
	return b.Bytes()
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

// photo is a stand-in for a photograph: smooth shading, hard edges of
// several colours and a little grain, the same for a given size.
func photo(w, h int) *image.NRGBA {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 120 + 80*math.Sin(6*fx+2*fy)
			g := 100 + 60*math.Cos(4*fy-3*fx)
			b := 90 + 50*math.Sin(9*fx*fy)
			if (x/(w/8)+y/(h/6))%3 == 0 { // hard-edged patches
				r, g, b = 230, 210, 40
			}
			n := rng.NormFloat64() * 4
			m.SetNRGBA(x, y, color.NRGBA{clamp8(r + n), clamp8(g + n), clamp8(b + n), 255})
		}
	}
	return m
}

func clamp8(v float64) uint8 { return uint8(math.Round(min(max(v, 0), 255))) }

// lum is pixel (x, y)'s 8-bit sRGB value, the mean of its colour channels,
// unpremultiplied.
func lum(m image.Image, x, y int) float64 {
	c := color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
	return (float64(c.R) + float64(c.G) + float64(c.B)) / 3
}

func nrgba(m image.Image, x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
}

// maxPremultipliedDiff is the largest difference, in 8-bit steps, between two
// images' premultiplied channels: what a viewer sees, whatever colour a
// transparent pixel claims.
func maxPremultipliedDiff(t testing.TB, a, b image.Image) int {
	t.Helper()
	if a.Bounds().Size() != b.Bounds().Size() {
		t.Fatalf("sizes differ: %v and %v", a.Bounds().Size(), b.Bounds().Size())
	}
	worst := 0
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r1, g1, b1, a1 := a.At(a.Bounds().Min.X+x, a.Bounds().Min.Y+y).RGBA()
			r2, g2, b2, a2 := b.At(b.Bounds().Min.X+x, b.Bounds().Min.Y+y).RGBA()
			for _, d := range []int{int(r1>>8) - int(r2>>8), int(g1>>8) - int(g2>>8), int(b1>>8) - int(b2>>8), int(a1>>8) - int(a2>>8)} {
				worst = max(worst, d, -d)
			}
		}
	}
	return worst
}
