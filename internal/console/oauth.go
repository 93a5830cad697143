package console

import (
	"net/http"

	"genjobs/internal/authserver"
	"genjobs/internal/console/connect"
	"genjobs/internal/console/pages"
	"genjobs/internal/httpapi"
)

// authorizePage is GET /app/oauth/authorize: an assistant's authorization
// request, after sign-in (toSignIn comes back here), answered with the
// consent page, an error page or a redirect to the client (connect.Parse).
func (c *Console) authorizePage(w http.ResponseWriter, r *http.Request, req *request) {
	if areq, ok := c.authorizeRequest(w, r, r.URL.RawQuery); ok {
		c.show(w, r, http.StatusOK, c.view(req, "", "Connect "+areq.Client.Name),
			pages.Consent(connect.Consent(areq, r.URL.RawQuery, req.session.CSRF, req.all, req.current.WorkspaceID)))
	}
}

func (c *Console) authorizeRequest(w http.ResponseWriter, r *http.Request, query string) (*authserver.AuthorizeRequest, bool) {
	areq, a, ok := connect.Parse(r.Context(), c.OAuth, httpapi.PublicBaseURL(c.OAuth.BaseURL, r), query)
	return areq, ok || c.answer(w, r, a, "oauth authorize")
}

// answer writes a, which is not ok (a redirect, an error page or an
// outage), and returns false.
func (c *Console) answer(w http.ResponseWriter, r *http.Request, a connect.Answer, what string) bool {
	switch {
	case a.Err != nil:
		c.internalError(w, r, what, a.Err)
	case a.Location != "":
		http.Redirect(w, r, a.Location, http.StatusSeeOther)
	default:
		c.fail(w, r, a.Status, a.Message)
	}
	return false
}

// consent is POST /app/oauth/authorize (form: the session's CSRF token, a
// workspace among the person's): the request is checked again, then
// Allow issues a code billed to the workspace, Deny answers access_denied.
func (c *Console) consent(w http.ResponseWriter, r *http.Request, req *request) {
	if areq, ok := c.authorizeRequest(w, r, r.PostForm.Get("request")); ok {
		a := connect.Decide(r.Context(), c.OAuth, areq, r.PostForm.Get("decision"), req.session.UserID, req.current.WorkspaceID)
		c.logger(r).Info("oauth consent", "decision", r.PostForm.Get("decision"), "client_id", areq.Client.ID, "workspace_id", req.current.WorkspaceID, "ok", a.Err == nil)
		c.answer(w, r, a, "oauth approve")
	}
}

func (c *Console) connectionsPage(w http.ResponseWriter, r *http.Request, req *request) {
	data, err := connect.List(r.Context(), c.OAuth.Store, req.session.UserID, req.current, req.all, c.Members.Members)
	if err != nil {
		c.internalError(w, r, "read connections", err)
		return
	}
	data.Acting = req.acting()
	v := c.view(req, "connections", "Connections")
	v.Notice = notices[r.URL.Query().Get("done")]
	c.show(w, r, http.StatusOK, v, pages.Connections(data))
}

// revokeConnection revokes a connection: the person's own, or as an owner
// any of the workspace's; another's is refused, nothing changed.
func (c *Console) revokeConnection(w http.ResponseWriter, r *http.Request, req *request) {
	g, a, ok := connect.Revoke(r.Context(), c.OAuth.Store, r.PathValue("id"), req.session.UserID, req.current, c.Clock.Now())
	if ok || c.answer(w, r, a, "revoke connection") {
		c.logger(r).Info("oauth connection revoked", "grant_id", g.ID, "workspace_id", g.WorkspaceID, "by", req.session.UserID)
		http.Redirect(w, r, Base+"/settings/connections?done=connection-revoked", http.StatusSeeOther)
	}
}
