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
	"genjobs/internal/metrics"
	"genjobs/internal/provider"
	"genjobs/internal/provider/cog"
	"genjobs/internal/provider/fal"
	"genjobs/internal/provider/replicate"
	"genjobs/internal/xray"
)

// Clients are the routes' adapters, one for each route by its endpoint
// path. Each route's requests reach its own base_url's host and port (as
// HostPort gives it), which the operator configured, without the network
// guard; any other host, another route's included, is a new destination
// the guard judges, and is never sent the route's credentials
// (provider.HTTPClient). A fal route's JWKS fetches reach only its
// jwks_url's host so. Every request is timed (ProviderLatency) and, in a
// sampled invocation, in its X-Ray trace.
func Clients(d app.Deps, routes provider.Routes) map[string]provider.Client {
	return RouteClients(routes, TrustedTransport(), d.Network.Guard().Transport(), xray.Lambda.Transport, d.Metrics)
}

// RouteClients builds Clients over the given transports: trusted for a
// route's own host, guarded for every other; trace (nil: none) wraps each
// client's transport; m (nil: none) times the requests.
func RouteClients(routes provider.Routes, trusted, guarded http.RoundTripper, trace func(http.RoundTripper) http.RoundTripper, m *metrics.Emitter) map[string]provider.Client {
	const timeout = 30 * time.Second
	out := make(map[string]provider.Client, len(routes))
	for path, r := range routes {
		hc := provider.HTTPClient([]string{r.HostPort()}, trusted, guarded, trace, timeout)
		var c provider.Client
		switch r.Provider {
		case provider.Replicate:
			c = replicate.New(hc)
		case provider.Cog:
			c = cog.New(hc)
		case provider.Fal:
			f := fal.New(hc)
			f.JWKS = provider.HTTPClient([]string{r.JWKSHostPort()}, trusted, guarded, trace, timeout)
			c = f
		default:
			continue // ParseRoutes names no other
		}
		out[path] = provider.Timed(c, m)
	}
	return out
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
