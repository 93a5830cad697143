package console

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"genjobs/internal/console/pages"
	"genjobs/internal/member"
)

// CookieName is the session cookie's name.
const CookieName = "console_session"

// request is a signed-in request: the session, the person's memberships,
// and the one it acts on.
type request struct {
	session member.Session
	cookie  string // the session cookie's value: the key to what it holds (holdOnce)
	all     []member.Membership
	current member.Membership // zero when the person is in no workspace
}

// setCookie gives the browser its session: HttpOnly, SameSite=Lax, under
// Base only, Secure wherever the console is served over HTTPS.
func (c *Console) setCookie(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: value, Path: Base, MaxAge: maxAge,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

// signedIn reads the request's session and memberships. ok is false when
// the request has no valid session; the answer is then written (back to
// sign-in, or an error page).
func (c *Console) signedIn(w http.ResponseWriter, r *http.Request) (*request, bool) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" || len(ck.Value) > 100 {
		c.toSignIn(w, r)
		return nil, false
	}
	now := c.Clock.Now()
	ses, err := c.Sessions.Session(r.Context(), member.HashSecret(ck.Value), now)
	if errors.Is(err, member.ErrSessionEnded) {
		c.setCookie(w, "", -1)
		c.toSignIn(w, r)
		return nil, false
	}
	if err != nil {
		c.internalError(w, r, "read session", err)
		return nil, false
	}
	if !c.recheck(w, r, &ses, ck.Value, now) { // security.go
		return nil, false
	}
	all, err := c.Members.Memberships(r.Context(), ses.UserID)
	if err != nil {
		c.internalError(w, r, "read memberships", err)
		return nil, false
	}
	req := &request{session: ses, cookie: ck.Value, all: all}
	for _, m := range all {
		if m.WorkspaceID == ses.WorkspaceID {
			req.current = m
		}
	}
	if req.current.WorkspaceID == "" && len(all) > 0 {
		// The chosen workspace is gone (or none was chosen): the first.
		req.current = all[0]
	}
	if ses.NeedsTouch(now) || ses.WorkspaceID != req.current.WorkspaceID {
		ses.SeenAt, ses.WorkspaceID = now, req.current.WorkspaceID
		if err := c.Sessions.UpdateSession(r.Context(), ses); errors.Is(err, member.ErrSessionEnded) {
			c.setCookie(w, "", -1)
			c.toSignIn(w, r)
			return nil, false
		} else if err != nil {
			c.internalError(w, r, "update session", err)
			return nil, false
		}
		req.session = ses
	}
	return req, true
}

func (c *Console) toSignIn(w http.ResponseWriter, r *http.Request) {
	target := Base + "/sign-in"
	if r.Method == http.MethodGet && (strings.HasPrefix(r.URL.Path, Base+"/settings/") || r.URL.Path == Base+"/oauth/authorize") {
		target += "?next=" + url.QueryEscape(r.URL.RequestURI())
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// page wraps a page's GET handler: only for a signed-in person.
func (c *Console) page(h func(http.ResponseWriter, *http.Request, *request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := c.signedIn(w, r)
		if !ok {
			return
		}
		if req.current.WorkspaceID == "" {
			c.show(w, r, http.StatusOK, c.view(req, "", "No workspace"), pages.NoWorkspace(req.session.Email))
			return
		}
		h(w, r, req)
	}
}

// MaxFormBytes caps a form's body.
const MaxFormBytes = 16 << 10

// form wraps a form's POST handler. Beyond the cross-origin check every
// request passes (Routes), it needs a signed-in session, the session's
// CSRF token, and a workspace field naming one of the person's
// workspaces, where their role allows the action (allowed nil: any role).
// Otherwise 403 (404 for a workspace that is not theirs), nothing changed.
func (c *Console) form(h func(http.ResponseWriter, *http.Request, *request), allowed func(member.Role) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		req, ok := c.signedIn(w, r)
		if !ok {
			return
		}
		sent := r.PostForm.Get("csrf")
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(req.session.CSRF)) != 1 {
			c.fail(w, r, http.StatusForbidden, "This form has expired or belongs to another session. Open the page again and resend it.")
			return
		}
		if allowed == nil {
			h(w, r, req)
			return
		}
		ws := r.PostForm.Get("workspace")
		var m member.Membership
		for _, x := range req.all {
			if x.WorkspaceID == ws {
				m = x
			}
		}
		if m.WorkspaceID == "" {
			c.fail(w, r, http.StatusNotFound, "There is no such workspace among yours.")
			return
		}
		if !allowed(m.Role) {
			c.fail(w, r, http.StatusForbidden, "Your role in "+m.WorkspaceName+" ("+string(m.Role)+") does not allow this.")
			return
		}
		req.current = m
		h(w, r, req)
	}
}

// switchWorkspace keeps the workspace chosen in the switcher in the session.
func (c *Console) switchWorkspace(w http.ResponseWriter, r *http.Request) {
	c.form(func(w http.ResponseWriter, r *http.Request, req *request) {
		ws := r.PostForm.Get("workspace")
		for _, m := range req.all {
			if m.WorkspaceID == ws {
				req.session.WorkspaceID, req.session.SeenAt = ws, c.Clock.Now()
				if err := c.Sessions.UpdateSession(r.Context(), req.session); err != nil {
					c.internalError(w, r, "switch workspace", err)
					return
				}
				http.Redirect(w, r, localPath(r.PostForm.Get("back"), Base+"/settings/api-tokens"), http.StatusSeeOther)
				return
			}
		}
		c.fail(w, r, http.StatusNotFound, "There is no such workspace among yours.")
	}, nil)(w, r)
}

// localPath is p when it is a path of the console, else def: a redirect
// target taken from a request never leaves the console.
func localPath(p, def string) string {
	if strings.HasPrefix(p, Base+"/") && !strings.HasPrefix(p, "//") && !strings.Contains(p, "\\") && !strings.ContainsAny(p, "\r\n") {
		return p
	}
	return def
}
