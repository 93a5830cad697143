// Package mcpfn wires the MCP function: POST /mcp, the API as MCP tools.
// Its tools call the REST routes' own handlers in process, so it links what
// the generate, jobs, usage and styles functions link, on one table client
// and one authentication cache. That cache also answers for the access
// tokens of OAuth connections: verified with the access-token key's public
// half (read from KMS on first use), their grants and their people's
// memberships read from the table.
package mcpfn

import (
	"context"
	"errors"
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/generatefn"
	"genjobs/internal/app/jobsfn"
	"genjobs/internal/app/kmswire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/app/stylesfn"
	"genjobs/internal/app/usagefn"
	"genjobs/internal/auth"
	"genjobs/internal/httpapi"
	"genjobs/internal/mcpauth"
	"genjobs/internal/mcpserver"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/oauthdb"
	"genjobs/internal/store/tokensdb"
)

// Build builds the MCP function's handler.
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"OAUTH_SIGNING_KEY_ID": d.Signing.OAuthKeyID}); err != nil {
		return nil, err
	}
	jobsAPI, err := sqswire.NewJobsAPI(d)
	if err != nil {
		return nil, err
	}
	jobsAPI.Auth = oauthAuthenticator(d, jobsAPI.Store)
	st, auth := jobsAPI.Store, jobsAPI.Auth
	gen, err := generatefn.Handler(d, jobsAPI)
	if err != nil {
		return nil, err
	}
	styles, err := stylesfn.Handler(d, st, auth)
	if err != nil {
		return nil, err
	}
	jobs, usage := jobsfn.Handler(d, jobsAPI), usagefn.Handler(d, st, auth)
	// The REST routes the tools call are registered with the tools, by the
	// first request that passes authentication: a 401 needs neither.
	api := app.OnFirstUse("route the API", func() (http.Handler, error) {
		api := http.NewServeMux()
		api.Handle("/generate/", gen.Routes())
		jobs := jobs.Routes()
		api.Handle("/jobs", jobs)
		api.Handle("/jobs/", jobs)
		api.Handle("/usage", usage.Routes())
		api.Handle("/styles", styles.Routes())
		api.Handle("/", httpapi.NotFound())
		return api, nil
	})
	rules, ok := gen.Prices.(mcpserver.PriceRules)
	if !ok {
		return nil, errors.New("mcp: the generate handler's price list cannot describe its rules")
	}
	server, err := mcpserver.New(mcpserver.Config{API: api, Auth: auth, Catalog: gen.Catalog, Prices: rules, Clock: d.Clock,
		BaseURL: d.API.BaseURL})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server)
	mux.Handle("/", httpapi.NotFound())
	return httpapi.Middleware(d.Log, mux), nil
}

// oauthAuthenticator is the API's authenticator (dynamodbwire.API) that also
// takes OAuth access tokens at /mcp: one cache of MaxCacheAge for API
// tokens, workspaces, grants and memberships.
func oauthAuthenticator(d app.Deps, st *store.Store) auth.Authenticator {
	cache := auth.NewCache(tokensdb.Directory(st), d.Clock).WithConnections(connections{grants: oauthdb.New(st), members: membersdb.New(st)})
	tokens := &mcpauth.Tokens{Key: kmswire.Signer(d, d.Signing.OAuthKeyID), Clock: d.Clock}
	return auth.Authenticator{Dir: cache, Uses: auth.NewUses(tokensdb.New(st), d.Clock),
		OAuth: &auth.OAuth{Tokens: tokens, Connections: cache}}
}

// connections adapts the grants' and the memberships' stores to
// auth.Connections.
type connections struct {
	grants  *oauthdb.DB
	members *membersdb.DB
}

func (c connections) Grant(ctx context.Context, id string) (auth.Grant, error) {
	g, err := c.grants.Grant(ctx, id)
	if errors.Is(err, oauthdb.ErrNotFound) {
		return auth.Grant{}, auth.ErrNotFound
	}
	if err != nil {
		return auth.Grant{}, err
	}
	return auth.Grant{ID: g.ID, UserID: g.UserID, WorkspaceID: g.WorkspaceID, Revoked: !g.Live()}, nil
}

func (c connections) Member(ctx context.Context, ws, user string) (auth.Member, error) {
	m, err := c.members.Membership(ctx, ws, user)
	if errors.Is(err, member.ErrNotMember) {
		return auth.Member{}, auth.ErrNotFound
	}
	if err != nil {
		return auth.Member{}, err
	}
	return auth.Member{WorkspaceID: m.WorkspaceID, UserID: m.UserID, Email: m.Email}, nil
}
