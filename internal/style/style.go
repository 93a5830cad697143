// Package style holds the style record, who may see a style, the nine
// listing filters and the query parameters of GET /styles (docs/api.md,
// "Styles"), and the sets a style belongs to, which the store keeps as index
// partitions so that every filter is a Query. It imports no AWS package.
//
// Owners: a style is owned by the API's own user of a workspace (user id
// api:{workspace_id}), by a user of the web application in a workspace, or
// by the service (owner null). Each user has a UUID, the record's owner.id:
// an application user's is the application's own id, the API user's is
// derived from its workspace (APIUserID).
//
// Visibility, for a caller who is a user U of workspace W (the API's user,
// or an application user): U's own styles, styles shared with W, the
// service's styles, and public styles approved for the public listing.
// So styles of the application and of the API are invisible to each other
// unless shared with the workspace, and an unapproved public style is seen
// only by its owner and the workspaces it is shared with.
package style

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"genjobs/internal/job"
)

// Errors the store and the handlers share.
var (
	// ErrNotFound: no such style, or the caller may not see (or own) it.
	ErrNotFound = errors.New("style: not found")
	// ErrBadCursor: a cursor that is malformed or from another query or workspace.
	ErrBadCursor = errors.New("style: cursor not valid for this workspace and query")
)

// Bounds of GET /styles (docs/api.md, "Pages and cursors").
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	MaxIDs       = 100 // entries of the ids parameter
	MaxIDLength  = 128 // a longer style id is not found without a read
)

// Models are the names a style's models are written with: the model
// segment of each generation endpoint (a test holds this to the catalog).
var Models = []string{
	"standard-enhance", "model-b-fast", "model-c", "model-d-flash-1.1",
	"model-e-4", "model-f-2.2", "model-g-3.1-rapid",
}

// KnownModel reports whether m is one of Models.
func KnownModel(m string) bool { return slices.Contains(Models, m) }

// OwnerKind says who owns a style.
type OwnerKind string

const (
	// OwnerAPI is the API's own user of a workspace (docs/api.md, "Styles").
	OwnerAPI OwnerKind = "api"
	// OwnerApp is a user of the web application, in a workspace.
	OwnerApp OwnerKind = "app"
	// OwnerService is the service itself: the record's owner is null.
	OwnerService OwnerKind = "service"
)

// Owner is a style's owner. ID is a lower-case UUID, empty for the service.
type Owner struct {
	Kind OwnerKind
	ID   string
	Name string
}

// APIUserName is the name the API's user of every workspace shows.
const APIUserName = "API"

// APIOwner is the API's own user of workspace ws.
func APIOwner(ws string) Owner {
	return Owner{Kind: OwnerAPI, ID: APIUserID(ws), Name: APIUserName}
}

// apiUserNamespace is the UUID namespace of API users' ids (RFC 9562 v5).
var apiUserNamespace = [16]byte{0x22, 0xf6, 0xdf, 0x8d, 0x7f, 0x22, 0x46, 0xc8, 0xaa, 0xed, 0x42, 0x3f, 0xff, 0x18, 0x1c, 0x26}

// APIUserID is the owner id (a UUID) of the API's user of workspace ws, the
// identity docs/api.md ("Styles") names api:{workspace_id}: a version 5 UUID of
// that name, so it needs no lookup and never changes.
func APIUserID(ws string) string {
	h := sha1.New()
	h.Write(apiUserNamespace[:])
	h.Write([]byte("api:" + ws))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u)
}

func formatUUID(u [16]byte) string {
	s := hex.EncodeToString(u[:])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// ValidUUID reports whether s is a UUID in its 8-4-4-4-12 text form (any
// version, lower or upper case).
func ValidUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// Style is a stored style.
type Style struct {
	ID          string
	WorkspaceID string // the owner's workspace; empty for the service
	Owner       Owner
	Title       string
	Prompt      string
	URLs        []string // images of the style; the first is its cover
	Models      []string
	Public      bool // the owner asked for the public listing
	Approved    bool // approved for the public listing
	EditorsPick bool
	Gallery     bool
	SharedWith  []string // workspace ids, sorted, without repeats
	LikeCount   int
	CreatedAt   time.Time
}

// IsService reports whether the service owns s.
func (s *Style) IsService() bool { return s.Owner.Kind == OwnerService }

// Listed reports whether s is in the public listing, seen by everyone:
// public and approved. The service's styles need no approval.
func (s *Style) Listed() bool { return s.Public && (s.Approved || s.IsService()) }

// SharedWithWorkspace reports whether s is shared with workspace ws.
func (s *Style) SharedWithWorkspace(ws string) bool { return slices.Contains(s.SharedWith, ws) }

// Share adds workspace ws to those s is shared with.
func (s *Style) Share(ws string) {
	if !s.SharedWithWorkspace(ws) {
		s.SharedWith = append(s.SharedWith, ws)
		slices.Sort(s.SharedWith)
	}
}

// Position is s's place in every listing: creation time, then id. Lists
// run newest first, so a page's cursor is the position of its last style.
func (s *Style) Position() string { return Position(s.CreatedAt, s.ID) }

// Position is the listing position of a style created at t with id id.
// Its text sorts as the positions do.
func Position(t time.Time, id string) string { return job.TimeOf(t).String() + "#" + id }

// Caller is who lists or shares: a user of a workspace.
type Caller struct {
	WorkspaceID string
	UserID      string // the owner id of the user
}

// APICaller is the API's own user of workspace ws: every API request.
func APICaller(ws string) Caller { return Caller{WorkspaceID: ws, UserID: APIUserID(ws)} }

// Owns reports whether c owns s.
func (c Caller) Owns(s *Style) bool { return !s.IsService() && s.Owner.ID == c.UserID }

// Visible reports whether c may see s (see the package comment).
func (c Caller) Visible(s *Style) bool {
	return s.IsService() || c.Owns(s) || s.SharedWithWorkspace(c.WorkspaceID) || s.Listed()
}

// NewID returns a new style id: "sty_" and 24 random hex digits.
func NewID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("style: crypto/rand failed: " + err.Error())
	}
	return "sty_" + hex.EncodeToString(b[:])
}

// ValidID reports whether s can be a style id: 1 to MaxIDLength letters,
// digits, '_' and '-'. Anything else is not found without a read.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// NewShareToken returns the secret part of a share link: 32 bytes from
// crypto/rand, base64url (43 characters).
func NewShareToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("style: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ShareLink is the application's page of a shared style (docs/api.md, "Styles").
func ShareLink(appURL, token string) string { return appURL + "/styles/shared/" + token }

// Record is a style as the API shows it: exactly the fields of docs/api.md
// ("Styles").
type Record struct {
	ID        string       `json:"id"`
	Title     string       `json:"title"`
	URLs      []string     `json:"urls"`
	Public    bool         `json:"public"`
	Prompt    string       `json:"prompt"`
	Owner     *OwnerRecord `json:"owner"` // null for the service
	LikeCount int          `json:"like_count"`
	CreatedAt job.Time     `json:"created_at"`
	CoverURL  string       `json:"cover_url"`
	Models    []string     `json:"models"`
}

// OwnerRecord is the owner object of a style (docs/api.md, "Styles").
type OwnerRecord struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	AvatarURL string `json:"avatar_url"`
}

// AvatarURL is where the web application serves a user's avatar.
func AvatarURL(appURL, userID string) string { return appURL + "/avatars/" + userID }

// Record is s as the API shows it; appURL is the web application's address.
func (s *Style) Record(appURL string) Record {
	r := Record{
		ID: s.ID, Title: s.Title, Public: s.Public, Prompt: s.Prompt, LikeCount: s.LikeCount,
		CreatedAt: job.TimeOf(s.CreatedAt), URLs: nonNil(s.URLs), Models: nonNil(s.Models),
	}
	if len(s.URLs) > 0 {
		r.CoverURL = s.URLs[0]
	}
	if !s.IsService() {
		r.Owner = &OwnerRecord{ID: s.Owner.ID, Name: s.Owner.Name, AvatarURL: AvatarURL(appURL, s.Owner.ID)}
	}
	return r
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// Validate checks a new style's fields.
func (s *Style) Validate() error {
	switch {
	case !ValidID(s.ID):
		return fmt.Errorf("style id %q is not valid", s.ID)
	case s.Owner.Kind == OwnerService && (s.Owner.ID != "" || s.WorkspaceID != ""):
		return errors.New("a service style has no owner id and no workspace")
	case s.Owner.Kind == OwnerAPI && s.Owner.ID != APIUserID(s.WorkspaceID):
		return errors.New("an API style is owned by its workspace's API user")
	case s.Owner.Kind == OwnerApp && (!ValidUUID(s.Owner.ID) || s.Owner.ID != strings.ToLower(s.Owner.ID)):
		return errors.New("an application user's id is a lower-case UUID")
	case s.Owner.Kind != OwnerService && s.Owner.Kind != OwnerAPI && s.Owner.Kind != OwnerApp:
		return fmt.Errorf("unknown owner kind %q", s.Owner.Kind)
	case s.Owner.Kind != OwnerService && s.WorkspaceID == "":
		return errors.New("a user's style belongs to a workspace")
	case len(s.Models) == 0:
		return errors.New("a style has at least one model")
	}
	for _, m := range s.Models {
		if !KnownModel(m) {
			return fmt.Errorf("model %q is not one of %s", m, strings.Join(Models, ", "))
		}
	}
	return nil
}
