package authserver

import (
	"net/http"
	"strings"

	"genjobs/internal/httpapi"
)

// Metadata is the authorization server's metadata (RFC 8414), members
// exactly these. The MCP Go SDK's oauthex.AuthServerMeta, which clients
// read it into, would also write an empty jwks_uri: no one verifies the
// access tokens but the service itself.
type Metadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
}

// NewMetadata is the document of the deployment at baseURL whose console is
// at appURL (where the authorization endpoint, a console page, is).
func NewMetadata(baseURL, appURL string) Metadata {
	base := strings.TrimSuffix(baseURL, "/")
	return Metadata{
		Issuer:                            base,
		AuthorizationEndpoint:             strings.TrimSuffix(appURL, "/") + "/oauth/authorize",
		TokenEndpoint:                     base + "/oauth/token",
		RegistrationEndpoint:              base + "/oauth/register",
		RevocationEndpoint:                base + "/oauth/revoke",
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_post"},
		ScopesSupported:                   []string{Scope},
		ClientIDMetadataDocumentSupported: true,
	}
}

// serveMetadata answers both well-known addresses with the same document.
// Browser-based clients read it across origins.
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age=300")
	httpapi.WriteJSON(w, http.StatusOK, NewMetadata(s.base(r), httpapi.AppURL(s.AppURL, r)))
}
