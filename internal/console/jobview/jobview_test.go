package jobview_test

import (
	"encoding/json"
	"testing"

	"genjobs/internal/catalog"
	"genjobs/internal/console/jobview"
)

// The job page finds input images by field name (the console does not
// link the catalog): for every endpoint, each string or list-of-strings
// field is an image field by that rule exactly when its schema says
// format image-ref.
func TestImageFieldsAreTheCatalogsImageRefs(t *testing.T) {
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range cat.Endpoints() {
		var schema struct {
			Properties map[string]struct {
				Type  any `json:"type"`
				Items *struct {
					Type any `json:"type"`
				} `json:"items"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(ep.Schema(), &schema); err != nil {
			t.Fatal(err)
		}
		for name, p := range schema.Properties {
			stringy := p.Type == "string" || p.Type == "array" && p.Items != nil && p.Items.Type == "string"
			if !stringy {
				continue
			}
			if got, want := jobview.ImageField(name), ep.ImageField(name); got != want {
				t.Errorf("%s: field %s: the job page takes it for an image field: %v; its schema: %v", ep.Path(), name, got, want)
			}
		}
	}
}

// A request's image values are found by field and position.
func TestImageRefsOfARequest(t *testing.T) {
	got := jobview.ImageRefs(json.RawMessage(`{"prompt":"x","start_image":"https://a.example/1.png","style_images":["data:image/png;base64,AA","https://a.example/2.png"],"image_scaling_factor":2}`))
	want := []string{"start_image=https://a.example/1.png", "style_images[0]=data:image/png;base64,AA", "style_images[1]=https://a.example/2.png"}
	if len(got) != len(want) {
		t.Fatalf("got %+v; want %v", got, want)
	}
	for i, in := range got {
		if in.Field+"="+in.Ref != want[i] {
			t.Errorf("%d: %s=%s; want %s", i, in.Field, in.Ref, want[i])
		}
	}
}
