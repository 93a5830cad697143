package main

import (
	"strings"
	"testing"
)

// TestRoutesNote: the banner of make run names the routes file it loaded,
// where each endpoint goes, and a Cog server's --upload-url when a route
// is Cog's; without a file it says how to load one.
func TestRoutesNote(t *testing.T) {
	doc := `{"/generate/image/vendor-b/model-e-4": {"provider": "cog"}, "/generate/video/vendor-c/model-c": {"provider": "fal"}}`
	note := routesNote("routes.json", doc, "http://127.0.0.1:3180")
	for _, want := range []string{"routes from routes.json", "/generate/image/vendor-b/model-e-4 -> cog", "/generate/video/vendor-c/model-c -> fal",
		"--upload-url http://127.0.0.1:3180/callbacks/cog/uploads/",
		"--upload-url http://cog:{webhook_token}@127.0.0.1:3180/callbacks/cog/uploads/"} {
		if !strings.Contains(note, want) {
			t.Errorf("banner %q lacks %q", note, want)
		}
	}
	if note := routesNote("", "", "http://127.0.0.1:3180"); !strings.Contains(note, "PROVIDER_ROUTES_FILE") {
		t.Errorf("banner without routes: %q", note)
	}
}
