package provider

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
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

// Hosts are the HostPorts of the routes' base_urls: the servers the
// operator configured.
func (rs Routes) Hosts() []string {
	var out []string
	for _, r := range rs {
		if h := r.HostPort(); h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// HostPort is the HostPort of the route's base_url.
func (r *Route) HostPort() string {
	u, err := url.Parse(r.BaseURL)
	if err != nil {
		return ""
	}
	return HostPort(u)
}
