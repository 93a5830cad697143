package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"genjobs/internal/clock"
	"genjobs/internal/style"
)

// StyleStore lists styles and keeps their share links (store.Store).
type StyleStore interface {
	ListStyles(ctx context.Context, c style.Caller, q style.Query) (style.Page, error)
	ShareLink(ctx context.Context, id, owner, token string, at time.Time) (string, bool, error)
}

// Styles serves GET /styles and GET /styles/{id}/share/link (docs/api.md,
// "Styles"), as the API's own user of the token's workspace.
type Styles struct {
	Auth   Authenticator
	Styles StyleStore
	Clock  clock.Clock
	// AppURL is the web application's address (APP_URL): share links and
	// avatars. Empty, it is https://{the request's API domain}/app (AppURL).
	AppURL string
}

// msgStyleNotFound is the 404 of a share link (docs/api.md, "Styles").
const msgStyleNotFound = "Style not found or you are not the owner."

// Routes is the styles function's router.
func (h *Styles) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /styles", h.list)
	mux.HandleFunc("GET /styles/{id}/share/link", h.shareLink)
	mux.Handle("/", NotFound())
	return mux
}

type styleList struct {
	Items      []style.Record `json:"items"`
	NextCursor *string        `json:"next_cursor"`
}

func (h *Styles) list(w http.ResponseWriter, r *http.Request) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return
	}
	c := style.APICaller(p.WorkspaceID)
	q, cursor, err := parseStyleQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, invalidQueryPrefix+err.Error())
		return
	}
	if cursor != "" {
		if q.After, err = c.ResumeAfter(q, cursor); err != nil {
			writeError(w, http.StatusBadRequest, invalidQueryPrefix+msgBadStyleCursor)
			return
		}
	}
	page, err := h.Styles.ListStyles(r.Context(), c, q)
	if err != nil {
		internalError(w, r, "list styles", err)
		return
	}
	out := styleList{Items: make([]style.Record, 0, len(page.Styles))}
	app := AppURL(h.AppURL, r)
	for _, st := range page.Styles {
		out.Items = append(out.Items, st.Record(app))
	}
	if page.Next != "" {
		next := c.Cursor(q, page.Next)
		out.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, out)
}

type shareLink struct {
	ShareLink string `json:"share_link"`
	IsNew     bool   `json:"is_new"`
}

func (h *Styles) shareLink(w http.ResponseWriter, r *http.Request) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return
	}
	// An id no style can have is not found without a read.
	id := r.PathValue("id")
	if !style.ValidID(id) {
		writeError(w, http.StatusNotFound, msgStyleNotFound)
		return
	}
	token, isNew, err := h.Styles.ShareLink(r.Context(), id, style.APIUserID(p.WorkspaceID), style.NewShareToken(), h.Clock.Now())
	if errors.Is(err, style.ErrNotFound) {
		writeError(w, http.StatusNotFound, msgStyleNotFound)
		return
	}
	if err != nil {
		internalError(w, r, "share style", err)
		return
	}
	status := http.StatusOK
	if isNew {
		status = http.StatusCreated
		logger(r.Context()).Info("style share link created", "style_id", id, "workspace_id", p.WorkspaceID)
	}
	writeJSON(w, status, shareLink{ShareLink: style.ShareLink(AppURL(h.AppURL, r), token), IsNew: isNew})
}

// Query errors of GET /styles, after invalidQueryPrefix.
const (
	msgBadStyleCursor = "cursor is not valid for this workspace and query"
	msgBadStyleIDs    = "ids must be style ids separated by commas"
	msgBadStyleUser   = "user must be an owner id: a UUID, or api: followed by a workspace id"
)

// styleParams are the query parameters of GET /styles, in the order their
// errors are reported: by name, so the answer is the same on every call.
var styleParams = []string{"cursor", "filter", "ids", "liked", "limit", "model", "user"}

// parseStyleQuery reads the query string of GET /styles. It checks the
// parameters in name order and reports the first broken rule; unknown and
// repeated parameters are errors too. The cursor's binding to the
// workspace and query is checked by the caller (style.Caller.ResumeAfter).
func parseStyleQuery(raw string) (style.Query, string, error) {
	q := style.Query{Filter: style.All, Limit: style.DefaultLimit}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return q, "", errors.New("the query string is not well formed")
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	var cursor string
	for _, name := range names {
		vs := values[name]
		if !slices.Contains(styleParams, name) {
			return q, "", errors.New(name + " is not a known query parameter")
		}
		if len(vs) > 1 {
			return q, "", errors.New(name + " is given more than once")
		}
		v := vs[0]
		switch name {
		case "cursor":
			if _, _, err := style.ParseCursor(v); err != nil {
				return q, "", errors.New(msgBadStyleCursor)
			}
			cursor = v
		case "filter":
			f, ok := style.ParseFilter(v)
			if !ok {
				names := make([]string, len(style.Filters))
				for i, f := range style.Filters {
					names[i] = string(f)
				}
				return q, "", errors.New("filter must be one of " + strings.Join(names, ", "))
			}
			q.Filter = f
		case "ids":
			ids := strings.Split(v, ",")
			if len(ids) > style.MaxIDs {
				return q, "", errors.New("ids has " + strconv.Itoa(len(ids)) + " ids; at most " + strconv.Itoa(style.MaxIDs) + " are allowed")
			}
			for _, id := range ids {
				if !style.ValidID(id) {
					return q, "", errors.New(msgBadStyleIDs)
				}
			}
			slices.Sort(ids)
			q.IDs = slices.Compact(ids)
		case "liked":
			switch v {
			case "true":
				q.Liked = true
			case "false":
			default:
				return q, "", errors.New("liked must be true or false")
			}
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > style.MaxLimit {
				return q, "", errors.New("limit must be an integer between 1 and " + strconv.Itoa(style.MaxLimit))
			}
			q.Limit = n
		case "model":
			if !style.KnownModel(v) {
				return q, "", errors.New("model must be one of " + strings.Join(style.Models, ", "))
			}
			q.Model = v
		case "user":
			user, ok := parseOwnerID(v)
			if !ok {
				return q, "", errors.New(msgBadStyleUser)
			}
			q.User = user
		}
	}
	return q, cursor, nil
}

// parseOwnerID reads the user parameter: an owner id as records show it
// (a UUID, any letter case), or the API user's name api:{workspace_id}
// (docs/api.md, "Styles"), which stands for that user's owner id.
func parseOwnerID(v string) (string, bool) {
	if ws, ok := strings.CutPrefix(v, "api:"); ok {
		if !style.ValidID(ws) {
			return "", false
		}
		return style.APIUserID(ws), true
	}
	if !style.ValidUUID(v) {
		return "", false
	}
	return strings.ToLower(v), true
}
