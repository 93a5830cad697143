package reference_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/engine"
	"genjobs/internal/engine/reference"
)

// Every endpoint of the catalog has a reference engine, and each engine
// reads what the catalog hands over: a body as a client writes it (numbers
// as 4.0, fields left to their defaults), decoded and stored as the catalog
// does, with a small image for each image reference, gives one file of the
// model's kind.
func TestReferenceRunsEveryCatalogModel(t *testing.T) {
	c, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 48, 32))); err != nil {
		t.Fatal(err)
	}
	// Small but valid bodies; the sizes near the minimum keep the test fast.
	bodies := map[string]string{
		"standard-enhance":  `{"width": 96, "height": 64.0, "image_url": "https://example.com/a.png", "model": "Standard V2"}`,
		"model-b-fast":      `{"prompt": "a cat", "resolution": "480p", "aspect_ratio": "1:1", "duration": 4.0, "start_image": "https://example.com/a.png"}`,
		"model-c":           `{"prompt": "a cat", "duration": 2.0}`,
		"model-d-flash-1.1": `{"prompt": "a cat", "duration": 3e0}`,
		"model-e-4":         `{"prompt": "a cat", "width": 64.0, "height": 96, "style_images": ["https://example.com/a.png"]}`,
		"model-f-2.2":       `{"prompt": "a cat", "width": 128, "height": 72.0, "duration": 2}`,
		"model-g-3.1-rapid": `{}`,
	}
	kinds := map[string]string{
		"enhance": "image/", "image": "image/png", "video": "image/gif", "3d": "model/gltf-binary",
	}
	reg := reference.Engines()
	for _, e := range c.Endpoints() {
		t.Run(e.Model, func(t *testing.T) {
			eng, ok := reg.For(e.Model)
			if !ok {
				t.Fatalf("no reference engine for %s", e.Model)
			}
			body, ok := bodies[e.Model]
			if !ok {
				t.Fatalf("no test body for %s", e.Model)
			}
			req, err := e.Decode([]byte(body), time.Now())
			if err != nil {
				t.Fatalf("catalog: %v", err)
			}
			var inputs []engine.Input
			for _, ref := range e.ImageRefs(req.Params) {
				inputs = append(inputs, engine.Input{Field: ref.Field, Index: ref.Index, ContentType: "image/png", Data: pic.Bytes()})
			}
			files, err := eng.Run(context.Background(), engine.Job{Model: e.Model, Request: json.RawMessage(req.JSON()), Inputs: inputs},
				func(engine.Update) error { return nil })
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(files) != 1 || !strings.HasPrefix(files[0].ContentType, kinds[e.Kind]) || len(files[0].Data) == 0 {
				var types []string
				for _, f := range files {
					types = append(types, f.ContentType)
				}
				t.Errorf("files %q, want one %s file", types, kinds[e.Kind])
			}
		})
	}
}
