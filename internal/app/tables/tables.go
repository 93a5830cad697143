// Package tables wires the table adapter that most functions build on, and
// the functions that use the table alone: usage and styles. It links the
// DynamoDB client and no other AWS client.
package tables

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/auth"
	"genjobs/internal/awsclient"
	"genjobs/internal/httpapi"
	"genjobs/internal/store"
)

// Store is the table adapter, on a DynamoDB client of its own that follows
// d's profile: build it once per function and share it.
func Store(d app.Deps) *store.Store {
	return store.New(store.NewClient(d.AWS, d.Retries.DynamoDB), d.Table)
}

// Authenticator resolves API tokens from st. It remembers each token and
// workspace it reads for up to auth.MaxCacheAge, for the life of the
// function instance: most requests then read neither. It records each
// token's last use at most once an hour (auth.Uses).
func Authenticator(d app.Deps, st *store.Store) auth.Authenticator {
	return auth.Authenticator{Dir: auth.NewCache(st, d.Clock), Uses: auth.NewUses(st, d.Clock)}
}

// Usage builds the usage function's handler.
func Usage(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"TABLE_NAME": d.Table}); err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Requests)
	st := Store(d)
	return httpapi.Middleware(d.Log, UsageHandler(d, st, Authenticator(d, st)).Routes()), nil
}

// UsageHandler is GET /usage's handler on st and a (the usage function's,
// and the MCP function's get_usage tool's).
func UsageHandler(d app.Deps, st *store.Store, a httpapi.Authenticator) *httpapi.Usage {
	return &httpapi.Usage{Auth: a, Ledger: st, Clock: d.Clock}
}
