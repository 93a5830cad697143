// Package generatefn wires the generate function: POST /generate/... Only
// its binary and the MCP function's link the catalog, the price list and the
// schema validator.
package generatefn

import (
	"fmt"
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/billing/prices"
	"genjobs/internal/catalog"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/generate"
	"genjobs/internal/provider"
	"genjobs/internal/store/assetsdb"
)

// Build builds the generate function's handler.
func Build(d app.Deps) (http.Handler, error) {
	api, err := sqswire.NewJobsAPI(d)
	if err != nil {
		return nil, err
	}
	g, err := Handler(d, api)
	if err != nil {
		return nil, err
	}
	return httpapi.Middleware(d.Log, g.Routes()), nil
}

// Handler is POST /generate's handler on api, for the generate function
// and for the MCP function, whose generation tools call it.
func Handler(d app.Deps, api sqswire.JobsAPI) (*generate.Handler, error) {
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
		Auth:              api.Auth,
		Catalog:           cat,
		Jobs:              api.Store,
		Prices:            list,
		Results:           api.Results,
		Queue:             api.Queue,
		Assets:            assetsdb.New(api.Store),
		Clock:             d.Clock,
		BaseURL:           d.API.BaseURL,
		AllowHTTPWebhooks: d.Network.AllowPrivate,
	}, nil
}
