// Package jobsfn wires the jobs function: GET /jobs..., cancellation (which
// may promote a backlog: SQS) and result links.
package jobsfn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/httpapi"
	"genjobs/internal/store"
	"genjobs/internal/store/deliveriesdb"
)

// Build builds the jobs function's handler.
func Build(d app.Deps) (http.Handler, error) {
	if err := d.Require("TABLE_NAME", "JOBS_QUEUE_URL", "RESULTS_BUCKET"); err != nil {
		return nil, err
	}
	st, auth := dynamodbwire.API(d)
	return httpapi.Middleware(d.Log, Handler(d, st, auth).Routes()), nil
}

// Handler is the jobs routes' handler on st and a, for the jobs function
// and for the MCP function, whose job tools call it.
func Handler(d app.Deps, st *store.Store, a httpapi.Authenticator) *httpapi.Jobs {
	cancel := sqswire.Lifecycle(d, st, sqswire.JobQueue(d, sqswire.Client(d)))
	return &httpapi.Jobs{Auth: a, Jobs: st, Results: d.ResultLinks(), Cancel: cancel, Deliveries: deliveriesdb.New(st)}
}
