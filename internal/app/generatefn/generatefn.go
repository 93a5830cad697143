// Package generatefn wires the generate function: POST /generate/... Only
// its binary and the MCP function's link the catalog, the price list and the
// schema validator.
package generatefn

import (
	"fmt"
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/billing/prices"
	"genjobs/internal/catalog"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/generate"
	"genjobs/internal/provider"
	"genjobs/internal/store"
	"genjobs/internal/store/assetsdb"
)

// Build builds the generate function's handler.
func Build(d app.Deps) (http.Handler, error) {
	if err := d.Require("TABLE_NAME", "JOBS_QUEUE_URL", "RESULTS_BUCKET"); err != nil {
		return nil, err
	}
	st, auth := dynamodbwire.API(d)
	g, err := Handler(d, st, auth)
	if err != nil {
		return nil, err
	}
	return httpapi.Middleware(d.Log, g.Routes()), nil
}

// Handler is POST /generate's handler on st and a, for the generate
// function and for the MCP function, whose generation tools call it.
func Handler(d app.Deps, st *store.Store, a httpapi.Authenticator) (*generate.Handler, error) {
	cat, err := catalog.New()
	if err != nil {
		return nil, err
	}
	list, err := prices.Load([]byte(d.API.PricesJSON))
	if err != nil {
		return nil, fmt.Errorf("PRICES_JSON: %w", err)
	}
	routes, err := provider.LoadRoutes(d.Providers.Routes, d.Providers.Queue, cat)
	if err != nil {
		return nil, err
	}
	return &generate.Handler{
		Providers:         routes,
		Metrics:           d.Metrics,
		Auth:              a,
		Catalog:           cat,
		Jobs:              st,
		Prices:            list,
		Results:           d.ResultLinks(),
		Queue:             sqswire.JobQueue(d, sqswire.Client(d)),
		Assets:            assetsdb.New(st),
		Clock:             d.Clock,
		BaseURL:           d.API.BaseURL,
		AllowHTTPWebhooks: d.Network.AllowPrivate,
	}, nil
}
