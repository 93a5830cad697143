package console

import (
	"errors"
	"net/http"

	"genjobs/internal/authserver"
	"genjobs/internal/console/connect"
	"genjobs/internal/console/pages"
	"genjobs/internal/httpapi"
	"genjobs/internal/member"
	"genjobs/internal/store/oauthdb"
)

// authorizePage is GET /app/oauth/authorize: an assistant's authorization
// request, after sign-in (toSignIn comes back here), answered with the
// consent page, an error page or a redirect to the client (connect.Parse).
func (c *Console) authorizePage(w http.ResponseWriter, r *http.Request, req *request) {
	areq, ok := c.authorizeRequest(w, r, r.URL.RawQuery)
	if ok {
		c.show(w, r, http.StatusOK, c.view(req, "", "Connect "+areq.Client.Name),
			pages.Consent(connect.Consent(areq, r.URL.RawQuery, req.session.CSRF, req.all, req.current.WorkspaceID)))
	}
}

// authorizeRequest checks an authorization request's query; not ok, the
// answer is written.
func (c *Console) authorizeRequest(w http.ResponseWriter, r *http.Request, query string) (*authserver.AuthorizeRequest, bool) {
	areq, a, ok := connect.Parse(r.Context(), c.OAuth, httpapi.PublicBaseURL(c.OAuth.BaseURL, r), query)
	switch {
	case ok:
		return areq, true
	case a.Err != nil:
		c.internalError(w, r, "oauth authorize", a.Err)
	case a.Location != "":
		http.Redirect(w, r, a.Location, http.StatusSeeOther)
	default:
		c.fail(w, r, a.Status, a.Message)
	}
	return nil, false
}

// consent is POST /app/oauth/authorize (form: the session's CSRF token, a
// workspace among the person's): the request is checked again, then
// Allow issues a code billed to the workspace, Deny answers access_denied.
func (c *Console) consent(w http.ResponseWriter, r *http.Request, req *request) {
	areq, ok := c.authorizeRequest(w, r, r.PostForm.Get("request"))
	if !ok {
		return
	}
	switch r.PostForm.Get("decision") {
	case "deny":
		http.Redirect(w, r, authserver.Deny(areq), http.StatusSeeOther)
	case "allow":
		to, err := c.OAuth.Approve(r.Context(), areq, req.session.UserID, req.current.WorkspaceID)
		if err != nil {
			c.internalError(w, r, "oauth approve", err)
			return
		}
		c.logger(r).Info("oauth connection approved", "client_id", areq.Client.ID, "workspace_id", req.current.WorkspaceID, "user_id", req.session.UserID)
		http.Redirect(w, r, to, http.StatusSeeOther)
	default:
		c.fail(w, r, http.StatusBadRequest, "Choose Allow or Deny.")
	}
}

func (c *Console) connectionsPage(w http.ResponseWriter, r *http.Request, req *request) {
	var members []member.Membership
	var err error
	if req.current.Role == member.Owner {
		members, err = c.Store.Members(r.Context(), req.current.WorkspaceID)
	}
	data, lerr := connect.List(r.Context(), c.OAuth.Store, req.session.UserID, req.current, req.all, members)
	if err = errors.Join(err, lerr); err != nil {
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
	id := r.PathValue("id")
	g, err := c.OAuth.Store.Grant(r.Context(), id)
	if !connect.ValidID(id) || errors.Is(err, oauthdb.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "There is no such connection.")
		return
	}
	if err != nil {
		c.internalError(w, r, "read connection", err)
		return
	}
	if !connect.MayRevoke(g, req.session.UserID, req.current) {
		c.fail(w, r, http.StatusForbidden, "Only the person who connected it, or an owner of its workspace, can revoke this connection.")
		return
	}
	if err := c.OAuth.Store.RevokeGrant(r.Context(), id, c.Clock.Now()); err != nil {
		c.internalError(w, r, "revoke connection", err)
		return
	}
	c.logger(r).Info("oauth connection revoked", "grant_id", id, "workspace_id", g.WorkspaceID, "by", req.session.UserID)
	http.Redirect(w, r, Base+"/settings/connections?done=connection-revoked", http.StatusSeeOther)
}
