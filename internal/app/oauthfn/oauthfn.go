// Package oauthfn wires the oauth function: the authorization server of MCP
// connections (its metadata, /oauth/register, /oauth/token, /oauth/revoke)
// and /mcp's protected resource metadata (docs/mcp.md, "Signing in with
// OAuth: what is built").
package oauthfn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/kmswire"
	"genjobs/internal/authserver"
	"genjobs/internal/httpapi"
	"genjobs/internal/mcpauth"
	"genjobs/internal/store/oauthdb"
)

// Build builds the oauth function's handler: the access-token key is read
// from KMS on first use, client ID metadata documents are fetched through
// the network guard.
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"TABLE_NAME": d.Table, "OAUTH_SIGNING_KEY_ID": d.Signing.OAuthKeyID}); err != nil {
		return nil, err
	}
	srv := &authserver.Server{
		BaseURL:   d.API.BaseURL,
		AppURL:    d.API.AppURL,
		Store:     oauthdb.New(dynamodbwire.Store(d)),
		Signer:    kmswire.Signer(d, d.Signing.OAuthKeyID),
		Documents: authserver.NewDocuments(d.Network.Guard(), d.Clock),
		Clock:     d.Clock,
	}
	mux := http.NewServeMux()
	resource := mcpauth.Handler(d.API.BaseURL)
	mux.Handle(mcpauth.MetadataPath, resource)
	mux.Handle(mcpauth.BareMetadataPath, resource)
	mux.Handle("/", srv.Handler())
	return httpapi.Middleware(d.Log, mux), nil
}
