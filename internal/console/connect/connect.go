// Package connect is what the console's OAuth pages decide (docs/console.md,
// "Connections"): the consent page an assistant's authorization request
// leads to (the authorization server's ParseAuthorize, Approve and Deny,
// package authserver), and the connections page, each connection's
// revocation and who may revoke it.
package connect

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"genjobs/internal/authserver"
	"genjobs/internal/console/pages"
	"genjobs/internal/member"
	"genjobs/internal/store/oauthdb"
)

// MaxRequest bounds an authorization request's query, as the consent
// form sends it back.
const MaxRequest = 8 << 10

// Answer is how an authorization request is answered when it is not the
// consent page: a redirect to the client (Location), an error page (Status
// and Message), or, for an outage, Err.
type Answer struct {
	Location string
	Status   int
	Message  string
	Err      error
}

// Parse checks an authorization request's query for the deployment at
// base. ok: req is good and the consent page follows; otherwise the
// Answer says what to do. A request the client got wrong is answered at
// its redirect URI only when that URI is one of the client's
// (authserver.RedirectError); an unknown client or a redirect URI of
// another is an error page, never a redirect.
func Parse(ctx context.Context, srv *authserver.Server, base, rawQuery string) (*authserver.AuthorizeRequest, Answer, bool) {
	if len(rawQuery) > MaxRequest {
		return nil, Answer{Status: http.StatusRequestURITooLong, Message: "The application's request is too long to be an authorization request."}, false
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, Answer{Status: http.StatusBadRequest, Message: "The application's request could not be read."}, false
	}
	req, err := srv.ParseAuthorize(ctx, base, q)
	var page *authserver.PageError
	var redirect *authserver.RedirectError
	switch {
	case errors.As(err, &page):
		return nil, Answer{Status: http.StatusBadRequest, Message: page.Message + " Nothing was sent back to it; tell its makers, or connect it again from the start."}, false
	case errors.As(err, &redirect):
		return nil, Answer{Location: redirect.Location}, false
	case err != nil:
		return nil, Answer{Err: err}, false
	}
	return req, Answer{}, true
}

// Decide answers the person's decision on req: "allow" issues a code for
// userID billed to workspaceID (Location: the redirect URI with it),
// "deny" answers access_denied; anything else is a 400 page.
func Decide(ctx context.Context, srv *authserver.Server, req *authserver.AuthorizeRequest, decision, userID, workspaceID string) Answer {
	switch decision {
	case "deny":
		return Answer{Location: authserver.Deny(req)}
	case "allow":
		to, err := srv.Approve(ctx, req, userID, workspaceID)
		return Answer{Location: to, Err: err}
	}
	return Answer{Status: http.StatusBadRequest, Message: "Choose Allow or Deny."}
}

// Consent is the consent page's data for req: the client's name (unverified
// when it registered itself), where the browser goes next, and the
// person's workspaces, the switcher's first chosen.
func Consent(req *authserver.AuthorizeRequest, rawQuery, csrf string, all []member.Membership, current string) pages.ConsentData {
	d := pages.ConsentData{CSRF: csrf, Request: rawQuery, Client: req.Client.Name, Unverified: req.Client.Registered,
		RedirectHost: host(req.RedirectURI), Workspaces: all, Current: current}
	if !req.Client.Registered {
		d.DocumentHost = host(req.Client.ID)
	}
	if d.Client == "" {
		d.Client = "An application"
	}
	return d
}

// host is the host (and port) of a URL, or the URL itself when it has none.
func host(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return u
	}
	return p.Host
}

// Grants is where the connections are (oauthdb.DB).
type Grants interface {
	GrantsOfPerson(ctx context.Context, userID string) ([]oauthdb.Grant, error)
	GrantsOfWorkspace(ctx context.Context, ws string) ([]oauthdb.Grant, error)
}

// List is the connections page of person self acting on current: their
// own live connections in every workspace, and for an owner every live
// connection of current, with who made it (members reads the workspace's).
func List(ctx context.Context, db Grants, self string, current member.Membership, all []member.Membership,
	members func(ctx context.Context, ws string) ([]member.Membership, error)) (pages.ConnectionsData, error) {
	d := pages.ConnectionsData{Owner: current.Role == member.Owner}
	mine, err := db.GrantsOfPerson(ctx, self)
	if err != nil {
		return d, err
	}
	names := map[string]string{}
	for _, m := range all {
		names[m.WorkspaceID] = m.WorkspaceName
	}
	for _, g := range mine {
		if g.Live() {
			c := row(g)
			c.Workspace, c.Revocable = orID(names[g.WorkspaceID], g.WorkspaceID), true
			d.Mine = append(d.Mine, c)
		}
	}
	if !d.Owner {
		return d, nil
	}
	theirs, err := db.GrantsOfWorkspace(ctx, current.WorkspaceID)
	if err != nil {
		return d, err
	}
	ms, err := members(ctx, current.WorkspaceID)
	if err != nil {
		return d, err
	}
	emails := map[string]string{}
	for _, m := range ms {
		emails[m.UserID] = m.Email
	}
	for _, g := range theirs {
		if g.Live() {
			c := row(g)
			c.Person, c.Revocable = orID(emails[g.UserID], g.UserID+" (no longer a member)"), true
			d.Workspace = append(d.Workspace, c)
		}
	}
	return d, nil
}

func row(g oauthdb.Grant) pages.Connection {
	c := pages.Connection{ID: g.ID, Client: orID(g.ClientName, g.ClientID), RedirectHost: host(g.RedirectURI), Granted: g.CreatedAt}
	if !g.LastUsedAt.IsZero() {
		t := g.LastUsedAt
		c.LastUsed = &t
	}
	return c
}

func orID(name, id string) string {
	if name == "" {
		return id
	}
	return name
}

// MayRevoke reports whether person self, acting on current, may revoke
// g: their own connection, or, for an owner, any of current's.
func MayRevoke(g oauthdb.Grant, self string, current member.Membership) bool {
	return g.UserID == self || current.Role == member.Owner && g.WorkspaceID == current.WorkspaceID
}

// Revoker reads and revokes connections (oauthdb.DB).
type Revoker interface {
	Grant(ctx context.Context, id string) (oauthdb.Grant, error)
	RevokeGrant(ctx context.Context, id string, now time.Time) error
}

// Revoke revokes connection id at now for person self acting on current
// (MayRevoke): ok, g is the connection revoked; otherwise the Answer is
// a 404 (no such connection), a 403 (another's), or an outage's Err, and
// nothing changed.
func Revoke(ctx context.Context, db Revoker, id, self string, current member.Membership, now time.Time) (oauthdb.Grant, Answer, bool) {
	if !ValidID(id) {
		return oauthdb.Grant{}, Answer{Status: http.StatusNotFound, Message: "There is no such connection."}, false
	}
	g, err := db.Grant(ctx, id)
	switch {
	case errors.Is(err, oauthdb.ErrNotFound):
		return g, Answer{Status: http.StatusNotFound, Message: "There is no such connection."}, false
	case err != nil:
		return g, Answer{Err: err}, false
	case !MayRevoke(g, self, current):
		return g, Answer{Status: http.StatusForbidden, Message: "Only the person who connected it, or an owner of its workspace, can revoke this connection."}, false
	}
	if err := db.RevokeGrant(ctx, id, now); err != nil {
		return g, Answer{Err: err}, false
	}
	return g, Answer{}, true
}

// ValidID reports whether id can name a grant ("gr_" and 32 hex digits).
func ValidID(id string) bool {
	if len(id) != 35 || !strings.HasPrefix(id, "gr_") {
		return false
	}
	for _, r := range id[3:] {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
