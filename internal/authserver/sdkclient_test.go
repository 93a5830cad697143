package authserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"genjobs/internal/authserver"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/mcpauth"
	"genjobs/internal/oauthtoken"
	"genjobs/internal/signing"
)

// The MCP Go SDK's OAuth client, as an assistant runs it, against the
// server: from /mcp's 401 it finds the protected resource metadata, then
// the authorization server's, registers, has the person approve (the
// consent page's calls stand in for the browser), and exchanges the code
// with its PKCE verifier and the resource. Public and client_secret_post
// registrations both connect.
func TestTheMCPGoSDKsOAuthClientConnects(t *testing.T) {
	for _, method := range []string{"none", "client_secret_post"} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t)
			mux := http.NewServeMux()
			srv := httptest.NewServer(lambdatest.Handler(mux))
			t.Cleanup(srv.Close)
			base := srv.URL
			e.srv.BaseURL, e.srv.AppURL = base, base+"/app"
			mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", mcpauth.Challenge(base, false))
				w.WriteHeader(http.StatusUnauthorized)
			})
			resource := mcpauth.Handler(base)
			mux.Handle(mcpauth.MetadataPath, resource)
			mux.Handle(mcpauth.BareMetadataPath, resource)
			mux.Handle("/", e.h)

			redirect := "http://127.0.0.1:33418/callback"
			h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
				DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
					ClientName: "SDK client", RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: method,
					GrantTypes: []string{"authorization_code", "refresh_token"},
				}},
				RedirectURL: redirect,
				// The person approves on the consent page: its calls.
				AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
					u, err := url.Parse(args.URL)
					if err != nil {
						return nil, err
					}
					req, err := e.srv.ParseAuthorize(ctx, base, u.Query())
					if err != nil {
						return nil, err
					}
					loc, err := e.srv.Approve(ctx, req, "usr_1", "ws_1")
					if err != nil {
						return nil, err
					}
					back, _ := url.Parse(loc)
					return &auth.AuthorizationResult{Code: back.Query().Get("code"), State: back.Query().Get("state")}, nil
				},
				Client: srv.Client(),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/mcp", nil)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Authorize(ctx, req, resp); err != nil {
				t.Fatalf("the SDK's authorization: %v", err)
			}
			ts, err := h.TokenSource(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := ts.Token()
			if err != nil {
				t.Fatal(err)
			}
			pub, err := e.srv.Signer.PublicKey(ctx)
			if err != nil {
				t.Fatal(err)
			}
			c, err := oauthtoken.Verify(tok.AccessToken, signing.NewKeySet(pub),
				oauthtoken.Expect{Issuer: base, Audience: authserver.Resource(base), Now: e.clock.T})
			if err != nil || c.Subject != "usr_1" || c.Workspace != "ws_1" || tok.RefreshToken == "" {
				t.Errorf("the SDK's token: %+v, %v (refresh token %q)", c, err, tok.RefreshToken)
			}
		})
	}
}
