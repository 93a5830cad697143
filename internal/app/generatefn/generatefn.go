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
	cat, list, err := Catalog(d)
	if err != nil {
		return nil, err
	}
	return HandlerOn(d, api, cat, list)
}

// Catalog is the catalog and the price list (PRICES_JSON over the embedded
// list) of Handler: reading them compiles no schema and reads no file but a
// PRICES_JSON override, so a function that builds its handler on first use
// (the console's playground) still refuses a bad override at init.
func Catalog(d app.Deps) (*catalog.Catalog, *prices.List, error) {
	cat, err := catalog.New()
	if err != nil {
		return nil, nil, err
	}
	list, err := prices.Load([]byte(d.API.PricesJSON))
	if err != nil {
		return nil, nil, fmt.Errorf("PRICES_JSON: %w", err)
	}
	return cat, list, nil
}

// HandlerOn is Handler over a catalog and price list Catalog read: it
// reads PROVIDER_ROUTES, each route checked against its endpoint's request
// schema.
func HandlerOn(d app.Deps, api sqswire.JobsAPI, cat *catalog.Catalog, list *prices.List) (*generate.Handler, error) {
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
