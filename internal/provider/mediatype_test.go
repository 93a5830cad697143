package provider_test

import (
	"testing"

	"genjobs/internal/provider"
)

// The media types an upload is kept as come from its bytes: the service's
// images, videos and 3D models; anything else, pages and scripts
// included, is a download.
func TestStoredTypeReadsTheBytes(t *testing.T) {
	for _, c := range []struct {
		name, data, want string
		media            bool
	}{
		{"png", string(pngBytes), "image/png", true},
		{"jpeg", "\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg", true},
		{"gif", "GIF89a\x01\x00\x01\x00", "image/gif", true},
		{"gltf json", `{"asset": {"version": "2.0"}, "meshes": []}`, "model/gltf+json", true},
		{"html", "<html><script>alert(1)</script>", "application/octet-stream", false},
		{"svg", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`, "application/octet-stream", false},
		{"json", `{"a": 1}`, "application/octet-stream", false},
		{"text", "hello", "application/octet-stream", false},
		{"empty", "", "application/octet-stream", false},
	} {
		got, media := provider.StoredType([]byte(c.data))
		if got != c.want || media != c.media {
			t.Errorf("%s: %q %v; want %q %v", c.name, got, media, c.want, c.media)
		}
	}
}
