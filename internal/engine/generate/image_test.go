package generate

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"genjobs/internal/engine"
)

func imageJob(prompt string, width, height int, seed int64, inputs ...engine.Input) engine.Job {
	return engine.Job{
		Model:   "model-e-4",
		Request: genRequest(map[string]any{"prompt": prompt, "width": width, "height": height, "seed": seed}),
		Inputs:  inputs,
	}
}

// imageRun runs Image and decodes its PNG.
func imageRun(t *testing.T, j engine.Job) (image.Image, []byte) {
	t.Helper()
	files, _ := genRun(t, Image{}, j)
	f := files[0]
	if f.ContentType != "image/png" || f.Ext != "png" {
		t.Fatalf("output is %s (.%s), want image/png (.png)", f.ContentType, f.Ext)
	}
	m, err := png.Decode(bytes.NewReader(f.Data))
	if err != nil {
		t.Fatalf("output does not decode as PNG: %v", err)
	}
	return m, f.Data
}

// The picture is exactly width x height and a picture rather than a flat
// fill; the same (prompt, seed) gives the same bytes, another seed or
// prompt another picture.
func TestImageSizeAndSeed(t *testing.T) {
	const prompt = "a red fox in fresh snow"
	tests := []struct{ width, height int }{
		{64, 64},
		{333, 517},
		{4096, 64},
		{64, 4096},
	}
	for _, tt := range tests {
		m, _ := imageRun(t, imageJob(prompt, tt.width, tt.height, 42))
		if got := m.Bounds(); got != image.Rect(0, 0, tt.width, tt.height) {
			t.Errorf("%d x %d: the PNG is %v", tt.width, tt.height, got)
		}
		colours := map[color.RGBA]bool{}
		for y := range tt.height {
			for x := range tt.width {
				colours[color.RGBAModel.Convert(m.At(x, y)).(color.RGBA)] = true
			}
		}
		if len(colours) < 100 {
			t.Errorf("%d x %d: only %d colours", tt.width, tt.height, len(colours))
		}
	}

	_, data := imageRun(t, imageJob(prompt, 256, 160, 42))
	if _, again := imageRun(t, imageJob(prompt, 256, 160, 42)); !bytes.Equal(data, again) {
		t.Error("the same prompt and seed gave other bytes")
	}
	if _, other := imageRun(t, imageJob(prompt, 256, 160, 43)); bytes.Equal(data, other) {
		t.Error("seeds 42 and 43 gave the same picture")
	}
	if _, other := imageRun(t, imageJob(prompt+"!", 256, 160, 42)); bytes.Equal(data, other) {
		t.Error("another prompt gave the same picture")
	}
}

// Style images give the picture their colours: one teal style image (as a
// PNG or a JPEG) makes a teal picture.
func TestImageStyleImagesSetThePalette(t *testing.T) {
	teal := genSolid(120, 80, color.RGBA{20, 150, 160, 255})
	tests := []struct {
		name   string
		inputs []engine.Input
	}{
		{"png", []engine.Input{genPNGInput("style_images", 0, teal)}},
		{"jpeg", []engine.Input{{Field: "style_images", ContentType: "image/jpeg", Data: jpegBytes(teal, 90)}}},
		{"teal and a photo", []engine.Input{
			genPNGInput("style_images", 0, teal),
			{Field: "style_images", Index: 1, ContentType: "image/webp", Data: webpBytes(genSolid(30, 30, color.RGBA{30, 170, 150, 255}))},
		}},
	}
	tealShare := func(m image.Image) float64 {
		b := m.Bounds()
		n := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := nrgba(m, x, y)
				if c.G > c.R && c.B > c.R {
					n++
				}
			}
		}
		return float64(n) / float64(b.Dx()*b.Dy())
	}
	for _, tt := range tests {
		m, _ := imageRun(t, imageJob("a quiet harbour", 300, 200, 5, tt.inputs...))
		if share := tealShare(m); share < 0.95 {
			t.Errorf("%s: %.0f%% of the pixels are teal, want at least 95%%", tt.name, 100*share)
		}
	}
	// Without a style image the same seed has its own colours.
	plain, _ := imageRun(t, imageJob("a quiet harbour", 300, 200, 5))
	styled, _ := imageRun(t, imageJob("a quiet harbour", 300, 200, 5, tests[0].inputs...))
	if maxPremultipliedDiff(t, plain, styled) < 32 {
		t.Error("the style image barely changed the picture")
	}
}
