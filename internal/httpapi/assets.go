package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"genjobs/internal/asset"
	"genjobs/internal/clock"
	"genjobs/internal/imagetype"
	"genjobs/internal/job"
	"genjobs/internal/jsonbody"
)

// Fixed client-facing texts of the asset endpoints (docs/api.md, "Assets").
const (
	msgAssetNotFound = "Asset not found."
	msgNotAnImage    = "The request body is not a PNG, JPEG or WebP image."
	msgImageTooLarge = "The image is larger than 4 MiB; use POST /assets/uploads."
)

// AssetStore keeps asset records.
type AssetStore interface {
	CreateAsset(ctx context.Context, a asset.Asset) error
	Asset(ctx context.Context, id string) (asset.Asset, error)
}

// Blobs holds asset bytes and mints the URLs that read and write them.
type Blobs interface {
	PutAsset(ctx context.Context, key, contentType string, data []byte) error
	AssetURL(ctx context.Context, key string) (string, error)
	AssetUploadURL(ctx context.Context, key, contentType string, size int64, expires time.Duration) (string, error)
}

// Assets serves POST /assets, POST /assets/uploads and GET /assets/{id}.
type Assets struct {
	Auth   Authenticator
	Assets AssetStore
	Blobs  Blobs
	Clock  clock.Clock
	// BaseURL is the API's public address, which asset URLs start with.
	// Empty: https:// and the domain each request reached.
	BaseURL string
}

// Routes is the assets function's router.
func (h *Assets) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /assets", h.create)
	mux.HandleFunc("POST /assets/uploads", h.createUpload)
	mux.HandleFunc("GET /assets/{id}", h.get)
	mux.Handle("/", NotFound())
	return mux
}

// Upload is POST /assets alone, for an in-process caller that stores
// images and reads none (the console's playground).
func (h *Assets) Upload() http.Handler { return http.HandlerFunc(h.create) }

type assetCreated struct {
	AssetURL string `json:"asset_url"`
}

// create stores a raw image body of at most 4 MiB. The Lambda adapter has
// already decoded API Gateway's base64, so r.Body holds the image's bytes.
// Nothing is written unless the body is an image of its declared type.
func (h *Assets) create(w http.ResponseWriter, r *http.Request) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return
	}
	// ParseMediaType lower-cases the type and drops parameters.
	declared, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !asset.ValidContentType(declared) {
		writeError(w, http.StatusBadRequest, msgNotAnImage)
		return
	}
	if r.ContentLength > asset.MaxDirectBytes {
		writeError(w, http.StatusRequestEntityTooLarge, msgImageTooLarge)
		return
	}
	// One byte over the cap tells a body that is too large.
	data, err := io.ReadAll(io.LimitReader(r.Body, asset.MaxDirectBytes+1))
	if err != nil {
		internalError(w, r, "read body", err)
		return
	}
	if len(data) > asset.MaxDirectBytes {
		writeError(w, http.StatusRequestEntityTooLarge, msgImageTooLarge)
		return
	}
	// The bytes must be an image, and the image the client said it sends.
	if sniffed, ok := imagetype.Sniff(data); !ok || sniffed != declared {
		writeError(w, http.StatusBadRequest, msgNotAnImage)
		return
	}
	id := asset.NewID()
	a := asset.Asset{
		ID: id, WorkspaceID: p.WorkspaceID, Key: asset.Key(p.WorkspaceID, id),
		ContentType: declared, Size: int64(len(data)), CreatedAt: h.Clock.Now(),
	}
	// The bytes first: a record never points at nothing.
	if err := h.Blobs.PutAsset(r.Context(), a.Key, a.ContentType, data); err != nil {
		internalError(w, r, "store asset bytes", err)
		return
	}
	if err := h.Assets.CreateAsset(r.Context(), a); err != nil {
		internalError(w, r, "create asset", err)
		return
	}
	logger(r.Context()).Info("asset stored", "asset_id", id, "workspace_id", a.WorkspaceID,
		"content_type", a.ContentType, "bytes", a.Size)
	u := asset.URL(publicBaseURL(h.BaseURL, r), id)
	w.Header().Set("Location", u)
	writeJSON(w, http.StatusCreated, assetCreated{AssetURL: u})
}

type uploadCreated struct {
	UploadURL string   `json:"upload_url"`
	AssetURL  string   `json:"asset_url"`
	ExpiresAt job.Time `json:"expires_at"`
}

// maxUploadRequestBytes bounds the JSON body of POST /assets/uploads, which
// has two short fields.
const maxUploadRequestBytes = 4 << 10

// createUpload answers a presigned PUT for an image of up to 50 MiB. The
// record is created at once, with the declared type and size; the URL's
// signature binds both, so S3 refuses any other upload.
func (h *Assets) createUpload(w http.ResponseWriter, r *http.Request) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusBadRequest, invalidBodyPrefix+"Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxUploadRequestBytes+1))
	if err != nil {
		internalError(w, r, "read body", err)
		return
	}
	contentType, size, reason := decodeUploadRequest(body)
	if reason != "" {
		writeError(w, http.StatusBadRequest, invalidBodyPrefix+reason)
		return
	}
	now := h.Clock.Now()
	id := asset.NewID()
	a := asset.Asset{
		ID: id, WorkspaceID: p.WorkspaceID, Key: asset.Key(p.WorkspaceID, id),
		ContentType: contentType, Size: size, CreatedAt: now,
	}
	// Presigning is local work; the record is written only once it succeeded.
	upload, err := h.Blobs.AssetUploadURL(r.Context(), a.Key, a.ContentType, a.Size, asset.UploadLifetime)
	if err != nil {
		internalError(w, r, "presign asset upload", err)
		return
	}
	if err := h.Assets.CreateAsset(r.Context(), a); err != nil {
		internalError(w, r, "create asset", err)
		return
	}
	logger(r.Context()).Info("asset upload issued", "asset_id", id, "workspace_id", a.WorkspaceID,
		"content_type", a.ContentType, "bytes", a.Size)
	u := asset.URL(publicBaseURL(h.BaseURL, r), id)
	w.Header().Set("Location", u)
	writeJSON(w, http.StatusCreated, uploadCreated{UploadURL: upload, AssetURL: u, ExpiresAt: job.TimeOf(now.Add(asset.UploadLifetime))})
}

// get redirects the owner to a short-lived presigned GET of the asset.
// Another workspace's asset is answered exactly like a missing one. The
// answer comes from the record alone (no S3 call): an upload URL's asset
// that was never uploaded redirects too, and S3 answers that GET with 404.
func (h *Assets) get(w http.ResponseWriter, r *http.Request) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if !asset.ValidID(id) {
		writeError(w, http.StatusNotFound, msgAssetNotFound)
		return
	}
	a, err := h.Assets.Asset(r.Context(), id)
	if errors.Is(err, asset.ErrNotFound) || err == nil && a.WorkspaceID != p.WorkspaceID {
		writeError(w, http.StatusNotFound, msgAssetNotFound)
		return
	}
	if err != nil {
		internalError(w, r, "read asset", err)
		return
	}
	u, err := h.Blobs.AssetURL(r.Context(), a.Key)
	if err != nil {
		internalError(w, r, "presign asset", err)
		return
	}
	w.Header().Set("Location", u)
	// The target expires within minutes: no cache may keep the redirect.
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusFound)
}

// decodeUploadRequest reads {"content_type","size"} and returns one broken
// rule, in the words of docs/api.md ("Errors"), or "". Where several fields break a
// rule, the first by name is reported, so every call gives the same answer.
func decodeUploadRequest(body []byte) (contentType string, size int64, reason string) {
	if len(body) > maxUploadRequestBytes {
		return "", 0, "the body is larger than " + strconv.Itoa(maxUploadRequestBytes) + " bytes"
	}
	fields, reason := jsonbody.DecodeObject(body)
	if reason != "" {
		return "", 0, reason
	}
	broken := map[string]string{}
	for name := range fields {
		if name != "content_type" && name != "size" {
			broken[name] = jsonbody.QuoteField(name) + " is not a known field"
		}
	}
	switch v, ok := fields["content_type"]; {
	case !ok:
		broken["content_type"] = "content_type is required"
	default:
		s, _ := v.(string)
		if !asset.ValidContentType(s) {
			broken["content_type"] = "content_type must be one of " + strings.Join(asset.ContentTypes, ", ")
		}
		contentType = s
	}
	switch v, ok := fields["size"]; {
	case !ok:
		broken["size"] = "size is required"
	default:
		n, ok := integer(v)
		if !ok || n < 1 || n > asset.MaxUploadBytes {
			broken["size"] = "size must be an integer between 1 and " + strconv.Itoa(asset.MaxUploadBytes)
		}
		size = n
	}
	if len(broken) > 0 {
		names := make([]string, 0, len(broken))
		for name := range broken {
			names = append(names, name)
		}
		return "", 0, broken[slices.Min(names)]
	}
	return contentType, size, ""
}

// integer reads a JSON number with an integral value ("1024", "1024.0",
// "1e3"); anything else, or beyond int64, is not one.
func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}
