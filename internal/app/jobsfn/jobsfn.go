// Package jobsfn wires the jobs function: GET /jobs..., cancellation (which
// may promote a backlog: SQS) and result links.
package jobsfn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/httpapi"
	"genjobs/internal/store/deliveriesdb"
)

// Build builds the jobs function's handler.
func Build(d app.Deps) (http.Handler, error) {
	api, err := sqswire.NewJobsAPI(d)
	if err != nil {
		return nil, err
	}
	return httpapi.Middleware(d.Log, Handler(d, api).Routes()), nil
}

// Handler is the jobs routes' handler on api, for the jobs function and for
// the MCP function, whose job tools call it.
func Handler(d app.Deps, api sqswire.JobsAPI) *httpapi.Jobs {
	cancel := sqswire.Lifecycle(d, api.Store, api.Queue)
	return &httpapi.Jobs{Auth: api.Auth, Jobs: api.Store, Results: api.Results, Cancel: cancel, Deliveries: deliveriesdb.New(api.Store)}
}
