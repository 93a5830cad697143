package authserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"genjobs/internal/httpapi"
	"genjobs/internal/store/oauthdb"
)

// Registration limits.
const (
	MaxRegistrationBytes = 16 << 10 // a registration request's body
	MaxRedirectURIs      = 10
	MaxURILength         = 2000
	MaxClientNameLength  = 200
)

// Registration error codes (RFC 7591 section 3.2.2).
const (
	errInvalidRedirectURI    = "invalid_redirect_uri"
	errInvalidClientMetadata = "invalid_client_metadata"
)

// register is POST /oauth/register: a public client (token_endpoint_auth_method
// "none", the default here) or a confidential one ("client_secret_post",
// given a secret once). 201 with the client's id; bad metadata 400
// invalid_redirect_uri or invalid_client_metadata, and nothing stored.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	w.Header().Set("Access-Control-Allow-Origin", "*")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRegistrationBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		registrationError(w, errInvalidClientMetadata, fmt.Sprintf("the registration is over %d bytes", MaxRegistrationBytes))
		return
	}
	if err != nil {
		registrationError(w, errInvalidClientMetadata, "the registration could not be read")
		return
	}
	var meta oauthex.ClientRegistrationMetadata
	if err := json.Unmarshal(body, &meta); err != nil {
		registrationError(w, errInvalidClientMetadata, "the registration is not a JSON object of RFC 7591's client metadata")
		return
	}
	if code, msg := checkMetadata(&meta); code != "" {
		registrationError(w, code, msg)
		return
	}
	now := s.Clock.Now()
	c := oauthdb.Client{
		ID: oauthdb.NewID("oc_"), Name: meta.ClientName, RedirectURIs: meta.RedirectURIs,
		AuthMethod: meta.TokenEndpointAuthMethod, CreatedAt: now,
	}
	var secret string
	if c.AuthMethod == oauthdb.AuthSecretPost {
		secret = oauthdb.NewSecret()
		c.SecretHash = oauthdb.Hash(secret)
	}
	if err := s.Store.RegisterClient(r.Context(), c); err != nil {
		httpapi.InternalError(w, r, "register oauth client", err)
		return
	}
	meta.GrantTypes = []string{"authorization_code", "refresh_token"}
	meta.ResponseTypes = []string{"code"}
	httpapi.WriteJSON(w, http.StatusCreated, &oauthex.ClientRegistrationResponse{
		ClientRegistrationMetadata: meta,
		ClientID:                   c.ID,
		ClientSecret:               secret,
		ClientIDIssuedAt:           now,
	})
}

func registrationError(w http.ResponseWriter, code, msg string) {
	httpapi.WriteJSON(w, http.StatusBadRequest, &oauthex.ClientRegistrationError{ErrorCode: code, ErrorDescription: msg})
}

// checkMetadata validates a registration's metadata and fills its defaults;
// it returns the RFC 7591 error code and a message, or "" when it is good.
func checkMetadata(m *oauthex.ClientRegistrationMetadata) (code, msg string) {
	if len(m.RedirectURIs) == 0 {
		return errInvalidRedirectURI, "redirect_uris is required"
	}
	if len(m.RedirectURIs) > MaxRedirectURIs {
		return errInvalidRedirectURI, fmt.Sprintf("redirect_uris has %d URIs; at most %d", len(m.RedirectURIs), MaxRedirectURIs)
	}
	for i, u := range m.RedirectURIs {
		if p := redirectURIProblem(u); p != "" {
			return errInvalidRedirectURI, fmt.Sprintf("redirect_uris[%d] %s", i, p)
		}
	}
	switch m.TokenEndpointAuthMethod {
	case "":
		m.TokenEndpointAuthMethod = oauthdb.AuthNone
	case oauthdb.AuthNone, oauthdb.AuthSecretPost:
	default:
		return errInvalidClientMetadata, `token_endpoint_auth_method must be "none" or "client_secret_post"`
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return errInvalidClientMetadata, `grant_types may hold only "authorization_code" and "refresh_token"`
		}
	}
	if len(m.ResponseTypes) > 0 && !slices.Equal(m.ResponseTypes, []string{"code"}) {
		return errInvalidClientMetadata, `response_types may hold only "code"`
	}
	if len(m.ClientName) > MaxClientNameLength {
		return errInvalidClientMetadata, fmt.Sprintf("client_name is over %d characters", MaxClientNameLength)
	}
	for name, u := range map[string]string{"client_uri": m.ClientURI, "logo_uri": m.LogoURI, "tos_uri": m.TOSURI, "policy_uri": m.PolicyURI} {
		if u != "" && (len(u) > MaxURILength || !strings.HasPrefix(u, "https://")) {
			return errInvalidClientMetadata, name + " must be an https URL of at most 2000 characters"
		}
	}
	return "", ""
}

// redirectURIProblem says what is wrong with a redirect URI a client
// registers, or "": https, or http on a loopback host (RFC 8252), no
// fragment, no user information, at most MaxURILength characters.
func redirectURIProblem(raw string) string {
	if len(raw) > MaxURILength {
		return fmt.Sprintf("is over %d characters", MaxURILength)
	}
	if strings.Contains(raw, "#") {
		return "has a fragment"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return "must be an https URL, or http on a loopback host"
	}
	if u.User != nil {
		return "has user information"
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()):
	default:
		return "must be an https URL, or http on a loopback host"
	}
	return ""
}

// loopback is a loopback host: localhost, 127.0.0.0/8 or ::1.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
