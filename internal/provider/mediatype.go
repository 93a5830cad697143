package provider

import (
	"bytes"
	"encoding/json"
	"net/http"

	"genjobs/internal/imagetype"
)

// Media types of the files the service makes, beyond imagetype's.
const (
	GIF      = "image/gif"
	MP4      = "video/mp4"
	WebM     = "video/webm"
	GLB      = "model/gltf-binary"
	GLTF     = "model/gltf+json"
	Download = "application/octet-stream"
)

// StoredType is the media type an uploaded file is kept and served with,
// read from its bytes, never from what the uploader declared: an image
// (PNG, JPEG, WebP, GIF), a video (MP4, WebM) or a 3D model (glTF binary,
// or glTF JSON), with media true; anything else is Download, served as an
// attachment (media false), so that no upload is ever rendered by a
// browser as a page of this service's.
func StoredType(data []byte) (contentType string, media bool) {
	if t, ok := imagetype.Sniff(data); ok {
		return t, true
	}
	if len(data) >= 12 && bytes.HasPrefix(data, []byte("glTF")) {
		return GLB, true
	}
	switch t := http.DetectContentType(data); t {
	case GIF, MP4, WebM:
		return t, true
	}
	var gltf struct {
		Asset *struct {
			Version string `json:"version"`
		} `json:"asset"`
	}
	if json.Unmarshal(data, &gltf) == nil && gltf.Asset != nil && gltf.Asset.Version != "" {
		return GLTF, true
	}
	return Download, false
}
