// Package usagefn wires the usage function: GET /usage.
package usagefn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/httpapi"
	"genjobs/internal/store"
	"genjobs/internal/store/ledgerdb"
)

// Build builds the usage function's handler.
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"TABLE_NAME": d.Table}); err != nil {
		return nil, err
	}
	st, auth := dynamodbwire.API(d)
	return httpapi.Middleware(d.Log, Handler(d, st, auth).Routes()), nil
}

// Handler is GET /usage's handler on st and a (the usage function's, and
// the MCP function's get_usage tool's).
func Handler(d app.Deps, st *store.Store, a httpapi.Authenticator) *httpapi.Usage {
	return &httpapi.Usage{Auth: a, Ledger: ledgerdb.New(st), Clock: d.Clock}
}
