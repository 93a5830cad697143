package xray

import (
	"net/http"
	"time"
)

// Transport records each request rt makes for a sampled invocation as a
// remote subsegment named by the host: method, status, and the URL
// without its query (a presigned URL's signature) or user info. Without
// the daemon it is rt itself.
func (d *Daemon) Transport(rt http.RoundTripper) http.RoundTripper {
	return d.transport(rt, false)
}

// HostTransport is Transport recording only the scheme and host: for
// URLs a client gave, whose paths may carry their tokens (a webhook's).
func (d *Daemon) HostTransport(rt http.RoundTripper) http.RoundTripper {
	return d.transport(rt, true)
}

func (d *Daemon) transport(rt http.RoundTripper, hostOnly bool) http.RoundTripper {
	if d == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &transport{next: rt, daemon: d, hostOnly: hostOnly}
}

type transport struct {
	next     http.RoundTripper
	daemon   *Daemon
	hostOnly bool
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	root, parent, sampled := Header(r.Context())
	if !sampled {
		return t.next.RoundTrip(r)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	s := Subsegment(r.URL.Hostname(), "remote", root, parent, start, time.Now())
	u := r.URL.Scheme + "://" + r.URL.Host
	if !t.hostOnly {
		u += r.URL.EscapedPath()
	}
	req := map[string]any{"method": r.Method, "url": u}
	s.HTTP = map[string]any{"request": req}
	status := 0
	if resp != nil {
		status = resp.StatusCode
		s.HTTP["response"] = map[string]any{"status": status}
	}
	s.Status(status, err != nil)
	t.daemon.Send(s)
	return resp, err
}
