package authserver

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"genjobs/internal/store/oauthdb"
)

// AuthorizeRequest is an authorization request ParseAuthorize accepted: what
// the consent page shows and, once the person allows it, Approve turns into
// a code.
type AuthorizeRequest struct {
	Client      Client
	RedirectURI string
	State       string
	Challenge   string // PKCE S256
	Resource    string // {base_url}/mcp
	Scope       string
}

// PageError is a refused authorization request that must be answered with
// an error page, never a redirect: the client is unknown or the redirect
// URI is not one of its own, so a redirect could hand a code or an error to
// someone else.
type PageError struct{ Message string }

func (e *PageError) Error() string { return e.Message }

// RedirectError is a refused authorization request whose client and
// redirect URI are good: the answer is a redirect to Location, which
// carries the RFC 6749 error and the state.
type RedirectError struct {
	Location string
	Err      *oidc.Error
}

func (e *RedirectError) Error() string { return e.Err.Error() }

// codeChallenge reports whether s is an S256 challenge: base64url of a
// SHA-256, 43 characters. Checked without a regular expression: compiling
// `^[A-Za-z0-9_-]{43}$` and the verifier's at init took about 0.2 ms of
// every cold start of the functions that link this package.
func codeChallenge(s string) bool { return pkceChars(s, 43, 43, "_-") }

// pkceChars reports whether s is min to max ASCII letters, digits and bytes
// of extra.
func pkceChars(s string, min, max int, extra string) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// ParseAuthorize checks the query of /oauth/authorize for the deployment at
// baseURL. It returns a *PageError (unknown client, redirect_uri missing or
// not registered), a *RedirectError (response_type not code, no PKCE or not
// S256, resource not {base_url}/mcp: invalid_target, an unknown scope), or
// another error for an outage (of the table, say).
func (s *Server) ParseAuthorize(ctx context.Context, baseURL string, q url.Values) (*AuthorizeRequest, error) {
	for _, p := range []string{"client_id", "redirect_uri"} {
		if len(q[p]) != 1 || q.Get(p) == "" {
			return nil, &PageError{Message: "The request must name exactly one " + p + "."}
		}
	}
	c, err := s.Client(ctx, q.Get("client_id"))
	if errors.Is(err, ErrUnknownClient) {
		return nil, &PageError{Message: "The application asking to connect is not known here."}
	}
	if err != nil {
		return nil, err
	}
	redirect := q.Get("redirect_uri")
	if !redirectMatches(c.RedirectURIs, redirect) {
		return nil, &PageError{Message: "The application's redirect URI is not one it registered."}
	}
	req := &AuthorizeRequest{Client: c, RedirectURI: redirect, State: q.Get("state")}
	refuse := func(e *oidc.Error) (*AuthorizeRequest, error) {
		return nil, &RedirectError{Location: withParams(redirect, "error", string(e.ErrorType), "error_description", e.Description, "state", req.State), Err: e}
	}
	for p, v := range q {
		if len(v) > 1 {
			return refuse(oidc.ErrInvalidRequest().WithDescription("%s", p+" is given more than once"))
		}
	}
	if q.Get("response_type") != "code" {
		return refuse(&oidc.Error{ErrorType: "unsupported_response_type", Description: "response_type must be code"})
	}
	switch method := q.Get("code_challenge_method"); {
	case q.Get("code_challenge") == "":
		return refuse(oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge and code_challenge_method S256"))
	case method != string(oidc.CodeChallengeMethodS256):
		return refuse(oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256"))
	case !codeChallenge(q.Get("code_challenge")):
		return refuse(oidc.ErrInvalidRequest().WithDescription("code_challenge must be the base64url SHA-256 of the verifier (43 characters)"))
	}
	req.Challenge = q.Get("code_challenge")
	req.Resource = Resource(baseURL)
	if r, ok := q["resource"]; ok && r[0] != req.Resource {
		return refuse(oidc.ErrInvalidTarget().WithDescription("%s", "resource must be "+req.Resource))
	}
	scope, ok := checkScope(q.Get("scope"))
	if !ok {
		return refuse(oidc.ErrInvalidScope().WithDescription("%s", "the only scope is "+Scope))
	}
	req.Scope = scope
	return req, nil
}

// checkScope is the scope granted for a requested one: jobs, the only one
// (also when none is asked for).
func checkScope(asked string) (string, bool) {
	for _, s := range strings.Fields(asked) {
		if s != Scope {
			return "", false
		}
	}
	return Scope, true
}

// Approve records the person's consent to req, billed to workspaceID, as a
// code (single use, 60 seconds) and returns where to send the browser: the
// redirect URI with the code and the state.
func (s *Server) Approve(ctx context.Context, req *AuthorizeRequest, userID, workspaceID string) (string, error) {
	code := oauthdb.NewSecret()
	if err := s.Store.IssueCode(ctx, code, oauthdb.Code{
		ClientID: req.Client.ID, RedirectURI: req.RedirectURI, Challenge: req.Challenge, Resource: req.Resource,
		Scope: req.Scope, UserID: userID, WorkspaceID: workspaceID, CreatedAt: s.Clock.Now(),
	}); err != nil {
		return "", err
	}
	return withParams(req.RedirectURI, "code", code, "state", req.State), nil
}

// Deny is where to send the browser when the person refuses: the redirect
// URI with error=access_denied and the state.
func Deny(req *AuthorizeRequest) string {
	return withParams(req.RedirectURI, "error", "access_denied", "state", req.State)
}

// redirectMatches reports whether got is one of the registered redirect
// URIs, byte for byte; for an http URI on a loopback host any port matches
// (RFC 8252 section 7.3: a native app listens on a port it gets at run time).
func redirectMatches(registered []string, got string) bool {
	if slices.Contains(registered, got) {
		return true
	}
	g, err := url.Parse(got)
	if err != nil || g.Scheme != "http" || !loopback(g.Hostname()) || g.User != nil || strings.Contains(got, "#") {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err == nil && u.Scheme == "http" && u.Hostname() == g.Hostname() && u.EscapedPath() == g.EscapedPath() &&
			u.RawQuery == g.RawQuery && g.ForceQuery == u.ForceQuery {
			return true
		}
	}
	return false
}

// withParams adds query parameters (name, value pairs; empty values left
// out) to a redirect URI, keeping its own.
func withParams(redirect string, kv ...string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return redirect
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
