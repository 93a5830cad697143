// Package mcpfn wires the MCP function: POST /mcp, the API as MCP tools.
// Its tools call the REST routes' own handlers in process, so it links what
// the generate, jobs, usage and styles functions link, on one table client
// and one authentication cache.
package mcpfn

import (
	"errors"
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/generatefn"
	"genjobs/internal/app/jobsfn"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/app/stylesfn"
	"genjobs/internal/app/usagefn"
	"genjobs/internal/httpapi"
	"genjobs/internal/mcpserver"
)

// Build builds the MCP function's handler.
func Build(d app.Deps) (http.Handler, error) {
	jobsAPI, err := sqswire.NewJobsAPI(d)
	if err != nil {
		return nil, err
	}
	st, auth := jobsAPI.Store, jobsAPI.Auth
	gen, err := generatefn.Handler(d, jobsAPI)
	if err != nil {
		return nil, err
	}
	styles, err := stylesfn.Handler(d, st, auth)
	if err != nil {
		return nil, err
	}
	api := http.NewServeMux()
	api.Handle("/generate/", gen.Routes())
	jobs := jobsfn.Handler(d, jobsAPI).Routes()
	api.Handle("/jobs", jobs)
	api.Handle("/jobs/", jobs)
	api.Handle("/usage", usagefn.Handler(d, st, auth).Routes())
	api.Handle("/styles", styles.Routes())
	api.Handle("/", httpapi.NotFound())
	rules, ok := gen.Prices.(mcpserver.PriceRules)
	if !ok {
		return nil, errors.New("mcp: the generate handler's price list cannot describe its rules")
	}
	server, err := mcpserver.New(mcpserver.Config{API: api, Auth: auth, Catalog: gen.Catalog, Prices: rules, Clock: d.Clock})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server)
	mux.Handle("/", httpapi.NotFound())
	return httpapi.Middleware(d.Log, mux), nil
}
