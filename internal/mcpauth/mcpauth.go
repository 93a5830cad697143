// Package mcpauth is the protected resource's side of MCP over OAuth: the
// protected resource metadata of /mcp (RFC 9728) and the WWW-Authenticate
// challenge of its 401s, which lead a client to the authorization server
// (internal/authserver). It is small on purpose: the mcp function links it.
package mcpauth

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"genjobs/internal/httpapi"
)

// Scope is the one scope an access token carries.
const Scope = "jobs"

// The protected resource metadata's two addresses: RFC 9728's, with the
// resource's path appended, and the bare one that clients try next.
const (
	MetadataPath     = "/.well-known/oauth-protected-resource/mcp"
	BareMetadataPath = "/.well-known/oauth-protected-resource"
)

// Metadata is /mcp's protected resource metadata for the deployment at
// baseURL: the resource {base_url}/mcp, its authorization server (the
// deployment itself), the scope, and tokens in the Authorization header.
func Metadata(baseURL string) *oauthex.ProtectedResourceMetadata {
	base := strings.TrimSuffix(baseURL, "/")
	return &oauthex.ProtectedResourceMetadata{
		Resource:               base + "/mcp",
		AuthorizationServers:   []string{base},
		ScopesSupported:        []string{Scope},
		BearerMethodsSupported: []string{"header"},
	}
}

// Challenge is the WWW-Authenticate of a 401 from /mcp: Bearer with the
// metadata's URL as resource_metadata, and error="invalid_token" when a
// token was sent and refused. Values are quoted-strings (RFC 9110 section
// 11.2): a URL has ':' and '/', which a token may not hold, and clients
// that read the parameter with a quoted-string pattern miss a bare one.
func Challenge(baseURL string, invalidToken bool) string {
	c := "Bearer resource_metadata=" + quote(strings.TrimSuffix(baseURL, "/")+MetadataPath)
	if invalidToken {
		c += `, error="invalid_token"`
	}
	return c
}

// quote is s as an RFC 9110 quoted-string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Handler serves the metadata at both addresses (GET; other methods 405),
// readable across origins, for the deployment at the configured base URL
// (empty: the domain the request reached).
func Handler(configuredBase string) http.Handler {
	mux := http.NewServeMux()
	serve := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		auth.ProtectedResourceMetadataHandler(Metadata(httpapi.PublicBaseURL(configuredBase, r))).ServeHTTP(w, r)
	}
	mux.HandleFunc("GET "+MetadataPath, serve)
	mux.HandleFunc("GET "+BareMetadataPath, serve)
	mux.Handle("/", httpapi.NotFound())
	return mux
}
