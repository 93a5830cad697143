// Package asset holds the images a client uploads to refer to in generation
// requests: their ids, where they are stored, the URL the API gives them,
// the image types they may have, and the size limits. It imports no AWS
// package.
package asset

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"net/url"
	"strings"
	"time"

	"genjobs/internal/imagetype"
)

// Asset is an uploaded image. It belongs to one workspace: only that
// workspace may read it or use its URL as an input.
type Asset struct {
	ID          string
	WorkspaceID string
	Key         string // the object's key in the assets bucket: Key(WorkspaceID, ID)
	ContentType string // one of ContentTypes
	Size        int64  // bytes; for a presigned upload, the size the client declared
	CreatedAt   time.Time
}

// ErrNotFound is what a store answers for an unknown asset id.
var ErrNotFound = errors.New("asset: not found")

// Size limits (docs/api.md, "Assets").
const (
	// MaxDirectBytes bounds a POST /assets body: API Gateway delivers a
	// binary body base64-encoded (4/3 larger) and Lambda takes at most 6 MB.
	MaxDirectBytes = 4 << 20
	// MaxUploadBytes bounds a presigned upload (POST /assets/uploads).
	MaxUploadBytes = 50 << 20
)

// UploadLifetime is how long a presigned upload URL stays valid.
const UploadLifetime = 15 * time.Minute

// The image types an asset may have; imagetype.Sniff tells them from the
// bytes.
const (
	PNG  = imagetype.PNG
	JPEG = imagetype.JPEG
	WebP = imagetype.WebP
)

// ContentTypes lists the accepted types, in the order messages name them.
var ContentTypes = []string{PNG, JPEG, WebP}

// ValidContentType reports whether ct is one of ContentTypes, exactly.
func ValidContentType(ct string) bool {
	return ct == PNG || ct == JPEG || ct == WebP
}

// idPrefix starts every asset id.
const idPrefix = "ast_"

// idEncoding writes 16 random bytes as 26 lower-case base32 characters.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// idLen is the prefix and the 26 characters of 128 random bits.
const idLen = len(idPrefix) + 26

// NewID returns a fresh asset id: "ast_" and 128 random bits in lower-case
// base32, e.g. ast_5n4aqmz2v7hxq3lbd6k2jy4r3e.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("asset: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return idPrefix + idEncoding.EncodeToString(b[:])
}

// ValidID reports whether id is an id NewID could have returned, spelled as
// it would have spelled it (lower case).
func ValidID(id string) bool {
	if len(id) != idLen || !strings.HasPrefix(id, idPrefix) {
		return false
	}
	// Re-encoding refuses non-zero trailing bits in the last character, so
	// that an id has exactly one spelling.
	b, err := idEncoding.DecodeString(id[len(idPrefix):])
	return err == nil && len(b) == 16 && idEncoding.EncodeToString(b) == id[len(idPrefix):]
}

// Key is where an asset's bytes are stored in the assets bucket. The
// workspace comes first so that one workspace's files can be listed and
// removed together.
func Key(workspaceID, id string) string {
	return "assets/" + workspaceID + "/" + id
}

// URL is the asset's URL as the API hands it out: baseURL (the API's public
// address, without a trailing slash) + "/assets/" + id.
func URL(baseURL, id string) string {
	return strings.TrimSuffix(baseURL, "/") + "/assets/" + id
}

// IDFromURL recognises an asset URL of this deployment and returns its id.
//
// The rule: ref must be an absolute http:// or https:// URL with no user
// info, query or fragment, whose path is exactly baseURL's path +
// "/assets/" + a valid id. When baseURL is set, ref's host (with its port)
// must equal baseURL's, compared case-insensitively; the scheme may be
// either. When baseURL is empty (the API takes its address from each
// request), any host is accepted and the path must be "/assets/<id>".
//
// An id returned here says nothing about who owns the asset: the caller
// still reads it and checks its workspace.
func IDFromURL(baseURL, ref string) (id string, ok bool) {
	u, err := url.Parse(ref)
	if err != nil || !httpURL(u) || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "" {
		return "", false
	}
	prefix := "/assets/"
	if baseURL != "" {
		b, err := url.Parse(baseURL)
		if err != nil || !httpURL(b) || !strings.EqualFold(u.Host, b.Host) {
			return "", false
		}
		prefix = strings.TrimSuffix(b.EscapedPath(), "/") + prefix
	}
	// The escaped path, so that "/assets%2Fast_..." is not taken for an asset.
	id, found := strings.CutPrefix(u.EscapedPath(), prefix)
	if !found || !ValidID(id) {
		return "", false
	}
	return id, true
}

func httpURL(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.Opaque == "" && u.User == nil && u.Host != ""
}
