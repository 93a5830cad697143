package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Asset upload limits: POST /assets takes a body of up to MaxDirectUpload
// bytes; larger images, up to MaxUpload, go through a presigned upload.
const (
	MaxDirectUpload = 4 << 20
	MaxUpload       = 50 << 20
)

// ErrNotAnImage is an upload of something other than a PNG, JPEG or WebP
// image, refused before anything is sent.
var ErrNotAnImage = errors.New("client: an asset must be a PNG, JPEG or WebP image")

// ErrTooLarge is an upload over MaxUpload bytes.
var ErrTooLarge = errors.New("client: too large")

// AssetsService uploads images to use as inputs of jobs.
type AssetsService struct{ c *Client }

// Asset is an uploaded image.
type Asset struct {
	// URL is the asset's URL, accepted as an image input by the jobs of
	// its own workspace.
	URL string `json:"asset_url"`
}

// Upload stores the image r reads (PNG, JPEG or WebP, up to MaxUpload
// bytes) and returns its asset URL. contentType may be empty: it is then
// read from the image's first bytes. An image of up to MaxDirectUpload
// bytes is sent in one request; a larger one to a presigned upload URL.
func (s *AssetsService) Upload(ctx context.Context, r io.Reader, contentType string) (*Asset, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxUpload+1))
	if err != nil {
		return nil, fmt.Errorf("client: read the image: %w", err)
	}
	if len(data) > MaxUpload {
		return nil, fmt.Errorf("%w: the image is over %d MiB", ErrTooLarge, MaxUpload>>20)
	}
	if contentType == "" {
		contentType = http.DetectContentType(data)
	}
	switch contentType {
	case "image/png", "image/jpeg", "image/webp":
	default:
		return nil, fmt.Errorf("%w, not %s", ErrNotAnImage, contentType)
	}
	if len(data) <= MaxDirectUpload {
		resp, err := s.c.do(ctx, request{method: http.MethodPost, path: "/assets", body: data, contentType: contentType})
		if err != nil {
			return nil, err
		}
		var a Asset
		return &a, decode(resp, &a)
	}
	start, _ := json.Marshal(map[string]any{"content_type": contentType, "size": len(data)})
	resp, err := s.c.do(ctx, request{method: http.MethodPost, path: "/assets/uploads", body: start, contentType: "application/json"})
	if err != nil {
		return nil, err
	}
	var up struct {
		UploadURL string    `json:"upload_url"`
		AssetURL  string    `json:"asset_url"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := decode(resp, &up); err != nil {
		return nil, err
	}
	// The URL's signature binds the type and the size: send exactly those.
	// (net/http sends the body's length as Content-Length.)
	_, err = s.c.do(ctx, request{method: http.MethodPut, rawURL: up.UploadURL, body: data, contentType: contentType, untimed: true})
	if err != nil {
		return nil, fmt.Errorf("client: upload to storage: %w", err)
	}
	return &Asset{URL: up.AssetURL}, nil
}
