// Package providerfn wires the provider function: the steps of jobs routed
// to a model provider, from the provider queue.
package providerfn

import (
	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/providerwire"
	"genjobs/internal/app/s3wire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/provider"
	"genjobs/internal/queue/providerqueue"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/store/submissionsdb"
	"genjobs/internal/xray"
)

// Build builds the provider function's handler of the provider queue.
func Build(d app.Deps) (app.SQSHandler, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "PROVIDER_QUEUE_URL": d.Providers.Queue,
		"RESULTS_BUCKET": d.Buckets.Results, "ASSETS_BUCKET": d.Buckets.Assets,
	}); err != nil {
		return nil, err
	}
	cat, routes, secrets, err := providerwire.Routing(d)
	if err != nil {
		return nil, err
	}
	st, c := dynamodbwire.Store(d), sqswire.Client(d)
	r := &provider.Runner{
		Store:   submissionsdb.New(st),
		Ender:   sqswire.Lifecycle(d, st, sqswire.JobQueue(d, c)),
		Queue:   providerqueue.New(c, d.Providers.Queue),
		Blobs:   providerwire.Blobs{Store: s3wire.Store(d)},
		Assets:  assetsdb.New(st),
		Secrets: secrets,
		Clients: providerwire.Clients(d, routes),
		Routes:  routes,
		Catalog: cat,
		Fetch:   xray.Lambda.Transport(d.Network.Guard().Transport()),
		Trusted: xray.Lambda.Transport(providerwire.TrustedTransport()),
		Clock:   d.Clock,
		Log:     d.Log,
		Timings: provider.DefaultTimings,
	}
	return r.HandleSQS, nil
}
