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
	p, err := a.Authenticate(r.Context(), r.Header.Get("Authorization"))
	switch {
	case err == nil:
		return p, true
	case errors.Is(err, auth.ErrUnauthenticated):
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(w, http.StatusUnauthorized, msgUnauthenticated)
	case errors.Is(err, auth.ErrAPIDisabled):
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(w, http.StatusUnauthorized, msgAPIDisabled)
	default:
		internalError(w, r, "authenticate", err)
	}
	return auth.Principal{}, false
}
