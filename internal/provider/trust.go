package provider

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// TrustedHosts is the transport of every request to a provider or for a
// provider's output. A request for one of Hosts (the routes' base_url,
// which the operator configured: exactly its host and port) goes through
// Trusted, without the network guard; any other through Guarded, the
// guard. An http.Client asks its transport again for each redirect it
// follows, so every hop is judged anew: a trusted host cannot lead a
// request past the guard with a redirect.
type TrustedHosts struct {
	Hosts            []string // as HostPort gives them
	Trusted, Guarded http.RoundTripper
}

// RoundTrip sends r through Trusted or Guarded by its URL's host and port.
func (t *TrustedHosts) RoundTrip(r *http.Request) (*http.Response, error) {
	hp := HostPort(r.URL)
	if hp != "" && slices.Contains(t.Hosts, hp) {
		return t.Trusted.RoundTrip(r)
	}
	return t.Guarded.RoundTrip(r)
}

// HostPort is u's host, lower-cased, with its port, the scheme's default
// when it names none ("api.replicate.com:443"); "" for a URL that is not
// http(s) or has no host. Two URLs reach the same server alike only when
// their HostPorts are equal.
func HostPort(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return ""
	}
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		default:
			return ""
		}
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// HostPort is the HostPort of the route's base_url.
func (r *Route) HostPort() string { return hostPortOf(r.BaseURL) }

// JWKSHostPort is the HostPort of a fal route's jwks_url; "" for others.
func (r *Route) JWKSHostPort() string { return hostPortOf(r.JWKSURL) }

func hostPortOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return ""
	}
	return HostPort(u)
}

// HTTPClient is the client of the requests a route makes to one server:
// hosts (its base_url's HostPort; fal's JWKS has a client of its own) are
// reached through trusted, without the guard, anything else through
// guarded, hop by hop (TrustedHosts). trace, when not nil, wraps the
// transport (X-Ray). A redirect away from the first request's host and
// port never carries its credentials (DropCredentials).
func HTTPClient(hosts []string, trusted, guarded http.RoundTripper, trace func(http.RoundTripper) http.RoundTripper, timeout time.Duration) *http.Client {
	var rt http.RoundTripper = &TrustedHosts{Hosts: hosts, Trusted: trusted, Guarded: guarded}
	if trace != nil {
		rt = trace(rt)
	}
	return &http.Client{Timeout: timeout, Transport: rt, CheckRedirect: DropCredentials}
}

// Credentials are the headers a request's credentials travel in: every
// provider's (Replicate's and Cog's "Bearer", fal's "Key") is
// Authorization.
var Credentials = []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2"}

// maxRedirects is how many redirects a provider request follows, as
// net/http's default.
const maxRedirects = 10

// DropCredentials is an http.Client's CheckRedirect: once a redirect has
// left the first request's host and port, the next hops carry none of
// its Credentials. net/http drops them only for another host name: it
// keeps them for the same name at another port (127.0.0.1:5000 to
// 127.0.0.1:5001), and for a subdomain, both of which may be another
// route's server.
func DropCredentials(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	first := HostPort(via[0].URL)
	left := HostPort(req.URL) != first
	for _, r := range via[1:] {
		left = left || HostPort(r.URL) != first
	}
	if left || first == "" {
		for _, h := range Credentials {
			req.Header.Del(h)
		}
	}
	return nil
}
