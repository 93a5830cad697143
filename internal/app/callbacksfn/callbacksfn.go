// Package callbacksfn wires the callbacks function: the model providers'
// webhooks about routed jobs' predictions.
package callbacksfn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/providerwire"
	"genjobs/internal/app/s3wire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/callbacks"
	"genjobs/internal/provider"
	"genjobs/internal/queue/providerqueue"
	"genjobs/internal/store/submissionsdb"
)

// Build builds the handler of POST /callbacks/{provider}/{job_id}/{token}.
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "PROVIDER_QUEUE_URL": d.Providers.Queue,
		"RESULTS_BUCKET": d.Buckets.Results,
	}); err != nil {
		return nil, err
	}
	_, routes, secrets, err := providerwire.Routing(d)
	if err != nil {
		return nil, err
	}
	c := &provider.Callbacks{
		Store:   submissionsdb.New(dynamodbwire.Store(d)),
		Blobs:   providerwire.Blobs{Store: s3wire.Store(d)},
		Queue:   providerqueue.New(sqswire.Client(d), d.Providers.Queue),
		Secrets: secrets,
		Clients: providerwire.Clients(d, routes),
		Routes:  routes,
		Clock:   d.Clock,
		Log:     d.Log,
	}
	h := &callbacks.Handler{Receiver: c}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}
