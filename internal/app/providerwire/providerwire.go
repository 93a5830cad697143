// Package providerwire builds the adapters of routed jobs that the provider
// and callbacks functions share: the model providers' clients, their
// routes, their secrets in Secrets Manager and the S3 adapter as the
// provider steps use it. Constructors only: it links the provider adapters
// and the Secrets Manager client, which no other function links.
package providerwire

import (
	"context"
	"net/http"
	"time"

	"genjobs/internal/app"
	"genjobs/internal/blob"
	"genjobs/internal/catalog"
	"genjobs/internal/provider"
	"genjobs/internal/provider/cog"
	"genjobs/internal/provider/fal"
	"genjobs/internal/provider/replicate"
	"genjobs/internal/xray"
)

// Clients are the adapters by provider name. Their requests go to the
// routes' base_url, which the operator configured, without the network
// guard; a redirect elsewhere goes through it (provider.TrustedHosts).
// Every request is timed (ProviderLatency) and, in a sampled invocation,
// in its X-Ray trace.
func Clients(d app.Deps, routes provider.Routes) map[string]provider.Client {
	t := &provider.TrustedHosts{Hosts: routes.Hosts(), Trusted: TrustedTransport(), Guarded: d.Network.Guard().Transport()}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: xray.Lambda.Transport(t)}
	return map[string]provider.Client{
		provider.Replicate: provider.Timed(replicate.New(hc), d.Metrics),
		provider.Cog:       provider.Timed(cog.New(hc), d.Metrics),
		provider.Fal:       provider.Timed(fal.New(hc), d.Metrics),
	}
}

// TrustedTransport is the transport of the requests to the hosts the
// operator configured: no proxy, no guard.
func TrustedTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return t
}

// Routing is what both provider functions check at init: the catalog, the
// routes against it, and the secrets the routes name.
func Routing(d app.Deps) (*catalog.Catalog, provider.Routes, provider.Secrets, error) {
	cat, err := catalog.New()
	if err != nil {
		return nil, nil, nil, err
	}
	routes, err := provider.LoadRoutes(d.Providers.Routes, d.Providers.Queue, cat)
	if err != nil {
		return nil, nil, nil, err
	}
	sec, err := Secrets(d)
	if err != nil {
		return nil, nil, nil, err
	}
	return cat, routes, sec, nil
}

// Blobs is the S3 adapter as the provider steps use it.
type Blobs struct{ *blob.Store }

// CreateResult starts a streamed upload of an output.
func (b Blobs) CreateResult(ctx context.Context, key, contentType string) provider.Upload {
	return b.Store.CreateResult(ctx, key, contentType)
}
