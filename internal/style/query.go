package style

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"genjobs/internal/job"
)

// Filter is the filter parameter of GET /styles (docs/api.md, "Styles"). Every
// filter keeps to the styles the caller may see.
type Filter string

const (
	// All is everything the caller may see: its own, shared with its
	// workspace, the service's, and the public listing.
	All Filter = "all"
	// User is the caller's own styles.
	User Filter = "user"
	// Community is the public listing's styles owned by other users (not
	// the service's).
	Community Filter = "community"
	// Service is the service's styles (owner null).
	Service Filter = "service"
	// Shared is the styles shared with the caller's workspace.
	Shared Filter = "shared"
	// Unapproved is the caller's own styles not approved for the public listing.
	Unapproved Filter = "unapproved"
	// Editor is the editor's picks.
	Editor Filter = "editor"
	// Gallery is the styles in the public gallery.
	Gallery Filter = "gallery"
	// Public is the styles with public=true.
	Public Filter = "public"
)

// Filters lists the filters in the order of docs/api.md ("Styles").
var Filters = []Filter{All, User, Community, Service, Shared, Unapproved, Editor, Gallery, Public}

// ParseFilter returns the filter named s.
func ParseFilter(s string) (Filter, bool) {
	for _, f := range Filters {
		if string(f) == s {
			return f, true
		}
	}
	return "", false
}

// Query is one GET /styles request, validated.
type Query struct {
	Filter Filter
	Limit  int
	IDs    []string // sorted, without repeats; nil: any style
	Liked  bool     // only styles the caller liked
	User   string   // only styles of this owner id; "": any
	Model  string   // only styles whose models hold it; "": any
	// After is the position the page starts after (Style.Position), from
	// the cursor; "": the newest first.
	After string
}

// Page is one page of styles, newest first. Next is the position to go on
// after, "" on the last page.
type Page struct {
	Styles []Style
	Next   string
}

// Matches reports whether s belongs in c's listing for q, all but q.Liked:
// likes are separate items, which the store reads (see Sources).
func (c Caller) Matches(s *Style, q Query) bool {
	if !c.Visible(s) {
		return false
	}
	var ok bool
	switch q.Filter {
	case All:
		ok = true
	case User:
		ok = c.Owns(s)
	case Community:
		ok = s.Listed() && !s.IsService() && !c.Owns(s)
	case Service:
		ok = s.IsService()
	case Shared:
		ok = s.SharedWithWorkspace(c.WorkspaceID)
	case Unapproved:
		ok = c.Owns(s) && !s.Approved
	case Editor:
		ok = s.EditorsPick
	case Gallery:
		ok = s.Gallery
	case Public:
		ok = s.Public
	}
	return ok && c.Narrowed(s.Owner.ID, s.Models, s.ID, q)
}

// Narrowed checks the parameters that narrow any filter (user, model, ids)
// against a style's immutable fields, so that the store can check them on
// an index entry before it reads the style.
func (c Caller) Narrowed(ownerID string, models []string, id string, q Query) bool {
	switch {
	case q.User != "" && ownerID != q.User:
		return false
	case q.Model != "" && !slices.Contains(models, q.Model):
		return false
	case q.IDs != nil && !slices.Contains(q.IDs, id):
		return false
	case q.Filter == Community && ownerID == c.UserID:
		return false
	}
	return true
}

// Set names: the store keeps one index entry per style and set, keyed by
// the set and the style's position, so that each set is one Query in
// listing order.
const (
	setOwn          = "own#"          // + owner id: the owner's styles
	setUnapproved   = "unapproved#"   // + owner id: the owner's styles not approved
	setOwnPublic    = "ownpublic#"    // + owner id: the owner's public styles
	setService      = "service"       // the service's styles
	setListed       = "listed"        // the public listing (public and approved)
	setCommunity    = "community"     // the public listing's styles of users
	setShared       = "shared#"       // + workspace id: shared with it
	setSharedPublic = "sharedpublic#" // + workspace id: shared with it and public
	setEditor       = "editor"        // editor's picks
	setGallery      = "gallery"       // the public gallery
	setLiked        = "liked#"        // + user id: the user's likes (like entries)
)

// Sets are the sets s belongs to. Every change of a style rewrites the
// difference, in the same transaction as the style.
func (s *Style) Sets() []string {
	var out []string
	if s.IsService() {
		out = append(out, setService)
	} else {
		out = append(out, setOwn+s.Owner.ID)
		if !s.Approved {
			out = append(out, setUnapproved+s.Owner.ID)
		}
		if s.Public {
			out = append(out, setOwnPublic+s.Owner.ID)
		}
	}
	if s.Listed() {
		out = append(out, setListed)
		if !s.IsService() {
			out = append(out, setCommunity)
		}
	}
	for _, ws := range s.SharedWith {
		out = append(out, setShared+ws)
		if s.Public {
			out = append(out, setSharedPublic+ws)
		}
	}
	if s.EditorsPick {
		out = append(out, setEditor)
	}
	if s.Gallery {
		out = append(out, setGallery)
	}
	return out
}

// LikedSet is the set of the styles user liked: one like entry each.
func LikedSet(user string) string { return setLiked + user }

// Sources are the sets whose union holds every style c's listing for q can
// show (without q.IDs, which the store reads by key): the store merges
// them by position and checks Matches on each style. For most queries the
// union is exact; community also holds the caller's own listed styles,
// editor and gallery the picks the caller may not see, user= that user's
// styles the caller may not see.
func (c Caller) Sources(q Query) []string {
	if q.Liked {
		return []string{LikedSet(c.UserID)}
	}
	if q.User != "" {
		return []string{setOwn + q.User}
	}
	switch q.Filter {
	case User:
		return []string{setOwn + c.UserID}
	case Community:
		return []string{setCommunity}
	case Service:
		return []string{setService}
	case Shared:
		return []string{setShared + c.WorkspaceID}
	case Unapproved:
		return []string{setUnapproved + c.UserID}
	case Editor:
		return []string{setEditor}
	case Gallery:
		return []string{setGallery}
	case Public:
		return []string{setListed, setOwnPublic + c.UserID, setSharedPublic + c.WorkspaceID}
	}
	return []string{setOwn + c.UserID, setShared + c.WorkspaceID, setService, setListed}
}

// cursor is the opaque text of next_cursor: a position and the query it
// belongs to.
type cursor struct {
	After string `json:"a"`
	Query string `json:"q"`
}

// binding ties a cursor to c's workspace and the query's parameters (not
// the limit: pages of another size go on from the same position).
func (c Caller) binding(q Query) string {
	parts := []string{c.WorkspaceID, c.UserID, string(q.Filter), strconv.FormatBool(q.Liked), q.User, q.Model, strings.Join(q.IDs, ",")}
	if q.IDs == nil {
		parts[len(parts)-1] = "\x01" // no ids parameter differs from any list
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// Cursor is the next_cursor text that goes on after position next.
func (c Caller) Cursor(q Query, next string) string {
	b, _ := json.Marshal(cursor{After: next, Query: c.binding(q)})
	return base64.RawURLEncoding.EncodeToString(b)
}

// MaxCursorLength refuses absurd cursors before any decoding.
const MaxCursorLength = 512

// ParseCursor checks that text is a cursor at all; ResumeAfter checks that
// it belongs to the query.
func ParseCursor(text string) (after, binding string, err error) {
	if text == "" || len(text) > MaxCursorLength {
		return "", "", ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return "", "", ErrBadCursor
	}
	var cur cursor
	if err := json.Unmarshal(b, &cur); err != nil {
		return "", "", ErrBadCursor
	}
	created, id, ok := strings.Cut(cur.After, "#")
	if t, err := job.ParseTime(created); !ok || err != nil || t.String() != created || !ValidID(id) || cur.Query == "" {
		return "", "", ErrBadCursor
	}
	return cur.After, cur.Query, nil
}

// ResumeAfter returns the position a cursor of c's query q goes on after,
// or ErrBadCursor when it is malformed or belongs to another workspace or
// query.
func (c Caller) ResumeAfter(q Query, text string) (string, error) {
	after, binding, err := ParseCursor(text)
	if err != nil {
		return "", err
	}
	if binding != c.binding(q) {
		return "", ErrBadCursor
	}
	return after, nil
}
