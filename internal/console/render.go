package console

import (
	"bytes"
	"context"
	"net/http"

	"github.com/a-h/templ"

	"genjobs/internal/console/pages"
	"genjobs/internal/member"
)

// view is the layout's part of a page (pages.Frame), which show
// completes; a page takes its own typed parameters.
type view struct {
	Title  string
	Nav    string // the active tab
	Notice string // a confirmation after a redirect ("Token revoked.")

	Signed     bool
	Email      string
	CSRF       string
	Workspace  member.Membership
	Workspaces []member.Membership
	Back       string // the page's path, for the switcher to come back to

	CSS, JS   string
	Refresh   int    // seconds after which the page reloads itself (pages.Frame)
	RefreshTo string // the address it then loads, "" the same
}

// view starts the view of a signed-in page.
func (c *Console) view(req *request, nav, title string) *view {
	return &view{Title: title, Nav: nav, Signed: true, Email: req.session.Email, CSRF: req.session.CSRF,
		Workspace: req.current, Workspaces: req.all}
}

// acting is what the forms of req's page send with a change (pages.Acting).
func (req *request) acting() pages.Acting {
	return pages.Acting{CSRF: req.session.CSRF, Workspace: req.current}
}

// show writes the page body, a templ component of package pages, inside
// the layout framed by v (pages.Layout).
func (c *Console) show(w http.ResponseWriter, r *http.Request, status int, v *view, body templ.Component) {
	if v.Back == "" {
		v.Back = r.URL.Path
	}
	f := pages.Frame{Title: v.Title, Nav: v.Nav, Notice: v.Notice, Signed: v.Signed, Email: v.Email, CSRF: v.CSRF,
		Workspace: v.Workspace, Workspaces: v.Workspaces, Back: v.Back, CSS: c.css, JS: c.js, Refresh: v.Refresh, RefreshTo: v.RefreshTo}
	// Rendered without the request's deadline (templ's components stop at
	// a done context): the page of a request that ran out of time, the
	// 503 of an outage, is still written whole.
	c.write(w, r, status, v.Title, func(b *bytes.Buffer) error {
		return pages.Layout(f, body).Render(context.WithoutCancel(r.Context()), b)
	})
}

// write answers the page that draw renders, rendered whole before
// anything is sent, so that an error is a clean 500.
func (c *Console) write(w http.ResponseWriter, r *http.Request, status int, page string, draw func(*bytes.Buffer) error) {
	var buf bytes.Buffer
	if err := draw(&buf); err != nil {
		c.logger(r).Error("render page", "page", page, "error", err.Error())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("Something went wrong on our side."))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
