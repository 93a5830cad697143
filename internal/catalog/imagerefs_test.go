package catalog_test

import (
	"fmt"
	"testing"
	"time"
)

func TestImageRefsListTheImagesAWorkerFetches(t *testing.T) {
	c := newCatalog(t)
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	b := endpoint(t, c, "model-b-fast")
	req := accept(t, b, []byte(`{"prompt":"p","start_image":"https://a.example/s.png","end_image":"https://a.example/e.png",
		"reference_images":["https://a.example/r0.png","https://a.example/r1.png"],"reference_videos":["https://a.example/v.mp4"]}`), now)
	var got []string
	for _, r := range b.ImageRefs(req.Params) {
		got = append(got, r.Name()+"="+r.Ref)
	}
	want := []string{
		"end_image=https://a.example/e.png",
		"reference_images[0]=https://a.example/r0.png",
		"reference_images[1]=https://a.example/r1.png",
		"start_image=https://a.example/s.png",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ImageRefs = %v\nwant %v (videos are not images)", got, want)
	}
	if e, ok := c.ByPath("/generate/3d/vendor-g/model-g-3.1-rapid"); !ok || e.Model != "model-g-3.1-rapid" {
		t.Errorf("ByPath did not find model-g")
	}
	if _, ok := c.ByPath("/generate/3d/vendor-g/nope"); ok {
		t.Errorf("ByPath found an unknown path")
	}
}
