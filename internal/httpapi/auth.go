package httpapi

import (
	"context"
	"errors"
	"net/http"

	"genjobs/internal/auth"
)

// Authenticator resolves the Authorization header to a principal.
type Authenticator interface {
	Authenticate(ctx context.Context, header string) (auth.Principal, error)
}

// authenticate answers 401 (or 500) itself and reports false when the
// request may not go on. A 401 names the scheme it wants (RFC 6750), as MCP
// clients expect of a server that takes bearer tokens.
func authenticate(a Authenticator, w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	return authenticateWith(a, w, r, func(bool) string { return "Bearer" })
}

// authenticateWith is authenticate whose 401s carry challenge(sent) as
// their WWW-Authenticate, sent saying whether the request had an
// Authorization header (a token that was refused).
func authenticateWith(a Authenticator, w http.ResponseWriter, r *http.Request, challenge func(sent bool) string) (auth.Principal, bool) {
	if o, ok := OriginOf(r.Context()); ok && o.Person != nil {
		// An in-process caller that signed the person in: no token.
		return auth.Principal{WorkspaceID: o.Person.WorkspaceID, PersonID: o.Person.UserID, Email: o.Person.Email}, true
	}
	p, err := a.Authenticate(r.Context(), r.Header.Get("Authorization"))
	switch {
	case err == nil:
		return p, true
	case errors.Is(err, auth.ErrUnauthenticated):
		w.Header().Set("WWW-Authenticate", challenge(r.Header.Get("Authorization") != ""))
		writeError(w, http.StatusUnauthorized, msgUnauthenticated)
	case errors.Is(err, auth.ErrAPIDisabled):
		w.Header().Set("WWW-Authenticate", challenge(true))
		writeError(w, http.StatusUnauthorized, msgAPIDisabled)
	default:
		internalError(w, r, "authenticate", err)
	}
	return auth.Principal{}, false
}

// Origin is what an in-process caller of a REST handler says about the
// requests it makes: the MCP server's tools, the application's playground.
// It travels as a value of the request's context, which no client can
// set: neither a header nor a body can select it, so an API token can
// never be billed in compute units.
type Origin struct {
	// Source is where the request comes from: job.SourceMCP or
	// job.SourceApp ("" is a REST client: job.SourceAPI).
	Source string
	// Person, when set, is the signed-in person the request acts for (the
	// console's session, an OAuth MCP connection): the request is
	// authenticated as the person in their workspace without a token, and
	// a creation is billed in compute units to the workspace and
	// attributed to the person. Only a caller that signed the person in
	// and checked their membership sets it.
	Person *Person
}

// Person is a signed-in person in the workspace they act in.
type Person struct {
	WorkspaceID string
	UserID      string
	Email       string
}

type originKey struct{}

// WithOrigin returns ctx carrying o, for a request a caller in process
// hands to a REST handler.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginOf is the Origin an in-process caller put on ctx, if any.
func OriginOf(ctx context.Context) (Origin, bool) {
	o, ok := ctx.Value(originKey{}).(Origin)
	return o, ok
}
