// Package authserver is the OAuth 2.1 authorization server of MCP
// connections (docs/mcp.md, "Signing in with OAuth: what is built"): its metadata (RFC
// 8414), dynamic client registration (RFC 7591), client ID metadata
// documents, the authorization step the console's consent page calls, the
// token endpoint (authorization_code with PKCE S256 and RFC 8707's resource,
// refresh_token with rotation) and revocation (RFC 7009). Its state is in
// the table (internal/store/oauthdb); its access tokens are JWTs signed by a
// KMS key of their own (internal/oauthtoken).
//
// The protocol's vocabulary comes from libraries: the error bodies, the
// token response and the PKCE check from github.com/zitadel/oidc/v3's oidc
// package, the registration request and response from the MCP Go SDK's
// oauthex. Zitadel's provider (its op package) is not used: it has no
// dynamic registration, client ID metadata documents or resource parameter,
// issues refresh tokens only for OpenID's offline_access scope, accepts
// PKCE "plain" and confidential clients without PKCE, publishes OpenID
// metadata (jwks_uri, userinfo, id_token) rather than the document MCP
// clients read, owns the authorization endpoint (ours is a console page),
// reads the wall clock, and would add chi and OpenTelemetry to the function.
package authserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/signing"
	"genjobs/internal/store/oauthdb"
)

// Scope is the one scope: create and follow jobs.
const Scope = "jobs"

// ResourcePath is the protected resource's path: its identifier (RFC 8707)
// is the base URL and this.
const ResourcePath = "/mcp"

// Server is the authorization server. Build it with its fields set; it is
// safe for concurrent use.
type Server struct {
	// BaseURL is the API's public address (BASE_URL); empty: the domain
	// the request reached (httpapi.PublicBaseURL).
	BaseURL string
	// AppURL is the console's address (APP_URL); empty: AppPath on the
	// API's domain (httpapi.AppURL).
	AppURL string
	Store  *oauthdb.DB
	// Signer is the access-token key (a KMS key of its own).
	Signer signing.Signer
	// Documents fetches client ID metadata documents; nil refuses client
	// ids that are URLs.
	Documents *Documents
	Clock     clock.Clock
}

// Handler serves the server's routes: the two metadata documents, POST
// /oauth/register, /oauth/token and /oauth/revoke. Wrap it in
// httpapi.Middleware (request ids, panics).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serveMetadata)
	mux.HandleFunc("GET /.well-known/openid-configuration", s.serveMetadata)
	mux.HandleFunc("POST /oauth/register", s.register)
	mux.HandleFunc("POST /oauth/token", s.token)
	mux.HandleFunc("POST /oauth/revoke", s.revoke)
	mux.Handle("/", httpapi.NotFound())
	return mux
}

func (s *Server) base(r *http.Request) string { return httpapi.PublicBaseURL(s.BaseURL, r) }

// Resource is the MCP endpoint's resource identifier: {base_url}/mcp.
func Resource(baseURL string) string { return strings.TrimSuffix(baseURL, "/") + ResourcePath }

// ErrUnknownClient: no registered client by that id, nor a usable client ID
// metadata document.
var ErrUnknownClient = errors.New("authserver: unknown client")

// Client finds a client by id: a registered one, or, for an id that is a
// URL, its client ID metadata document. The consent page shows its Name
// (marked unverified when Registered) and checks the redirect URI against
// it (through ParseAuthorize).
func (s *Server) Client(ctx context.Context, id string) (Client, error) {
	if isURL(id) {
		if s.Documents == nil {
			return Client{}, ErrUnknownClient
		}
		return s.Documents.Client(ctx, id)
	}
	c, err := s.Store.ClientByID(ctx, id)
	if errors.Is(err, oauthdb.ErrNotFound) {
		return Client{}, ErrUnknownClient
	}
	if err != nil {
		return Client{}, err
	}
	return Client{Client: c, Registered: true}, nil
}

// Client is a client as the server knows it.
type Client struct {
	oauthdb.Client
	// Registered is a client that registered itself (RFC 7591): its name is
	// its own claim, shown as unverified. A client ID metadata document's
	// client is named by a URL on its own domain.
	Registered bool
}

func isURL(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// authenticate checks the client of a token or revocation request:
// client_id, and for a confidential client its client_secret (the form's:
// client_secret_post). An Authorization header (client_secret_basic) is
// refused: the metadata does not offer it.
func (s *Server) authenticate(r *http.Request, form url.Values) (Client, *oidc.Error) {
	if h := r.Header.Get("Authorization"); len(h) > 6 && strings.EqualFold(h[:6], "basic ") {
		return Client{}, oidc.ErrInvalidClient().WithDescription("client_secret_basic is not supported: send client_id and client_secret in the form (client_secret_post)")
	}
	id := form.Get("client_id")
	if id == "" {
		return Client{}, oidc.ErrInvalidClient().WithDescription("client_id is required")
	}
	c, err := s.Client(r.Context(), id)
	switch {
	case errors.Is(err, ErrUnknownClient):
		return Client{}, oidc.ErrInvalidClient().WithDescription("unknown client_id")
	case err != nil:
		return Client{}, oidc.ErrServerError().WithParent(err)
	}
	if c.AuthMethod == oauthdb.AuthSecretPost {
		secret := form.Get("client_secret")
		if secret == "" || subtle.ConstantTimeCompare([]byte(oauthdb.Hash(secret)), []byte(c.SecretHash)) != 1 {
			return Client{}, oidc.ErrInvalidClient().WithDescription("client authentication failed")
		}
	}
	return c, nil
}

// writeError answers an RFC 6749 error body: 401 for invalid_client, 500
// (logged, a fixed text) for server_error, 503 with Retry-After for an
// outage of a dependency, else 400.
func writeError(w http.ResponseWriter, r *http.Request, e *oidc.Error) {
	status := http.StatusBadRequest
	switch e.ErrorType {
	case oidc.InvalidClient:
		status = http.StatusUnauthorized
	case oidc.ServerError:
		httpapi.InternalError(w, r, "oauth "+r.URL.Path, e.Parent)
		return
	}
	noStore(w)
	httpapi.WriteJSON(w, status, e)
}

// noStore marks an answer that holds tokens or their errors (RFC 6749
// section 5.1).
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}
