// Package providerfn wires the functions of routed jobs: the provider
// function (the steps of the provider queue) and the callbacks function
// (the providers' webhooks). It stands apart from package app so that only
// their binaries link the provider adapters and the Secrets Manager client.
package providerfn

import (
	"context"
	"net/http"
	"time"

	"genjobs/internal/app"
	"genjobs/internal/app/blobs"
	"genjobs/internal/app/queues"
	"genjobs/internal/app/tables"
	"genjobs/internal/awsclient"
	"genjobs/internal/blob"
	"genjobs/internal/catalog"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/callbacks"
	"genjobs/internal/netguard"
	"genjobs/internal/provider"
	"genjobs/internal/provider/cog"
	"genjobs/internal/provider/fal"
	"genjobs/internal/provider/replicate"
	"genjobs/internal/queue/providerqueue"
	"genjobs/internal/xray"
)

// clients are the adapters by provider name. Their requests go to the
// routes' base_url, which the operator configured, without the network
// guard; a redirect elsewhere goes through it (provider.TrustedHosts).
// Every request is timed (ProviderLatency) and, in a sampled invocation,
// in its X-Ray trace.
func clients(d app.Deps, routes provider.Routes) map[string]provider.Client {
	t := &provider.TrustedHosts{Hosts: routes.Hosts(), Trusted: trustedTransport(), Guarded: guard(d).Transport()}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: xray.Lambda.Transport(t)}
	return map[string]provider.Client{
		provider.Replicate: provider.Timed(replicate.New(hc), d.Metrics),
		provider.Cog:       provider.Timed(cog.New(hc), d.Metrics),
		provider.Fal:       provider.Timed(fal.New(hc), d.Metrics),
	}
}

// guard is the network policy of every request the service makes for a
// client's or a provider's URL.
func guard(d app.Deps) *netguard.Guard {
	return &netguard.Guard{AllowPrivate: d.AllowPrivateDestinations}
}

func trustedTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return t
}

// Provider builds the provider function's handler of the provider queue.
func Provider(d app.Deps) (app.SQSHandler, error) {
	err := app.Require(map[string]string{"TABLE_NAME": d.Table, "PROVIDER_QUEUE_URL": d.ProviderQueueURL, "RESULTS_BUCKET": d.ResultsBucket, "ASSETS_BUCKET": d.AssetsBucket})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Events)
	cat, routes, secrets, err := routing(d)
	if err != nil {
		return nil, err
	}
	st, c := tables.Store(d), queues.Client(d)
	r := &provider.Runner{
		Store:   st,
		Ender:   queues.Lifecycle(d, st, queues.JobQueue(d, c)),
		Queue:   providerqueue.New(c, d.ProviderQueueURL),
		Blobs:   Blobs{blobs.Store(d)},
		Assets:  st,
		Secrets: secrets,
		Clients: clients(d, routes),
		Routes:  routes,
		Catalog: cat,
		Fetch:   xray.Lambda.Transport(guard(d).Transport()),
		Trusted: xray.Lambda.Transport(trustedTransport()),
		Clock:   d.Clock,
		Log:     d.Log,
		Timings: provider.DefaultTimings,
	}
	return app.WithMargin(r.HandleSQS), nil
}

// routing is what both provider functions check at init: the catalog, the
// routes against it, and the secrets the routes name.
func routing(d app.Deps) (*catalog.Catalog, provider.Routes, provider.Secrets, error) {
	cat, err := catalog.New()
	if err != nil {
		return nil, nil, nil, err
	}
	routes, err := provider.LoadRoutes(d.ProviderRoutes, d.ProviderQueueURL, cat)
	if err != nil {
		return nil, nil, nil, err
	}
	sec, err := Secrets(d)
	if err != nil {
		return nil, nil, nil, err
	}
	return cat, routes, sec, nil
}

// Callbacks builds the handler of POST /callbacks/{provider}/{job_id}/{token}.
func Callbacks(d app.Deps) (http.Handler, error) {
	err := app.Require(map[string]string{"TABLE_NAME": d.Table, "PROVIDER_QUEUE_URL": d.ProviderQueueURL, "RESULTS_BUCKET": d.ResultsBucket})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Requests)
	_, routes, secrets, err := routing(d)
	if err != nil {
		return nil, err
	}
	c := &provider.Callbacks{
		Store:   tables.Store(d),
		Blobs:   Blobs{blobs.Store(d)},
		Queue:   providerqueue.New(queues.Client(d), d.ProviderQueueURL),
		Secrets: secrets,
		Clients: clients(d, routes),
		Routes:  routes,
		Clock:   d.Clock,
		Log:     d.Log,
	}
	h := &callbacks.Handler{Receiver: c}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}

// Blobs is the S3 adapter as the provider steps use it.
type Blobs struct{ *blob.Store }

// CreateResult starts a streamed upload of an output.
func (b Blobs) CreateResult(ctx context.Context, key, contentType string) provider.Upload {
	return b.Store.CreateResult(ctx, key, contentType)
}
