package jobview_test

import (
	"encoding/json"
	"testing"

	"genjobs/internal/catalog"
	"genjobs/internal/console/jobview"
)

// A job page shows as input images the values its endpoint's schema says
// are images (format image-ref), by field and position, and none for a job
// of an endpoint the catalog no longer has.
func TestInputImagesAreTheSchemasImageRefs(t *testing.T) {
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	ep, ok := cat.Lookup("image", "vendor-b", "model-e-4")
	if !ok {
		t.Fatal("model-e-4 is not in the catalog")
	}
	request := json.RawMessage(`{"prompt":"an image of a lighthouse","style_images":["data:image/png;base64,AA","https://a.example/2.png"]}`)
	got := jobview.ImageRefs(ep, request)
	want := []string{"style_images[0]=data:image/png;base64,AA", "style_images[1]=https://a.example/2.png"}
	if len(got) != len(want) {
		t.Fatalf("inputs %+v; want %v", got, want)
	}
	for i, in := range got {
		if in.Field+"="+in.Ref != want[i] {
			t.Errorf("input %d: %s=%s; want %s", i, in.Field, in.Ref, want[i])
		}
	}
	if got := jobview.ImageRefs(nil, request); got != nil {
		t.Errorf("a job of an endpoint no longer in the catalog shows inputs %+v; want none", got)
	}
}
