package xray_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"genjobs/internal/xray"
)

type segment struct {
	Name, ID, Type, Namespace string
	TraceID                   string  `json:"trace_id"`
	ParentID                  string  `json:"parent_id"`
	Start                     float64 `json:"start_time"`
	End                       float64 `json:"end_time"`
	Error, Fault, Throttle    bool
	HTTP                      struct {
		Request  struct{ Method, URL string }
		Response struct{ Status int }
	}
}

func listen(t *testing.T) net.PacketConn {
	t.Helper()
	daemon, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Close() })
	return daemon
}

func receive(t *testing.T, daemon net.PacketConn, wait time.Duration) (segment, bool) {
	t.Helper()
	_ = daemon.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 64<<10)
	n, _, err := daemon.ReadFrom(buf)
	if err != nil {
		return segment{}, false
	}
	header, doc, ok := bytes.Cut(buf[:n], []byte("\n"))
	if !ok || string(header) != `{"format": "json", "version": 1}` {
		t.Fatalf("packet %q: want the daemon's header line first", buf[:n])
	}
	var s segment
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatal(err)
	}
	return s, true
}

func sampled(flag string) context.Context {
	//lint:ignore SA1029 the key aws-lambda-go sets, a plain string
	return context.WithValue(context.Background(), "x-amzn-trace-id",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled="+flag)
}

// A model provider's or a webhook receiver's HTTP call made by a sampled
// invocation shows in its trace as a remote subsegment named by the host,
// with the method, the status and the URL without its query (a presigned
// URL's signature stays out of X-Ray); a webhook's URL shows only its host,
// as its path may hold the receiver's token. A failing answer is marked.
func TestOutboundHTTPCallsAreRemoteSubsegments(t *testing.T) {
	daemon := listen(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/busy") {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	d := xray.NewDaemon(daemon.LocalAddr().String())
	provider := &http.Client{Transport: d.Transport(nil)}
	webhook := &http.Client{Transport: d.HostTransport(nil)}

	do := func(c *http.Client, ctx context.Context, method, url string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	do(provider, sampled("0"), "GET", srv.URL+"/v1/predictions/unsampled")
	if s, ok := receive(t, daemon, 300*time.Millisecond); ok {
		t.Errorf("an unsampled call was sent: %+v", s)
	}
	do(provider, sampled("1"), "GET", srv.URL+"/v1/predictions/p1?X-Amz-Signature=secret")
	s, ok := receive(t, daemon, 5*time.Second)
	if !ok {
		t.Fatal("no subsegment reached the daemon")
	}
	if s.Name != "127.0.0.1" || s.Type != "subsegment" || s.Namespace != "remote" ||
		s.TraceID != "1-5759e988-bd862e3fe1be46a994272793" || s.ParentID != "53995c3f42cd8ad8" || len(s.ID) != 16 ||
		s.End < s.Start || s.HTTP.Request.Method != "GET" || s.HTTP.Request.URL != srv.URL+"/v1/predictions/p1" ||
		s.HTTP.Response.Status != 200 || s.Error || s.Fault {
		t.Errorf("provider call's subsegment %+v", s)
	}
	do(webhook, sampled("1"), "POST", srv.URL+"/busy/T000/B000/token")
	if s, ok = receive(t, daemon, 5*time.Second); !ok {
		t.Fatal("no subsegment of the webhook")
	}
	if s.HTTP.Request.URL != srv.URL || s.HTTP.Request.Method != "POST" || s.HTTP.Response.Status != 503 || !s.Fault {
		t.Errorf("webhook's subsegment %+v; want the host alone, 503, a fault", s)
	}
}

// Without a daemon (outside Lambda, or tracing off) the transport is the
// one given: nothing is wrapped.
func TestNoDaemonNoTracing(t *testing.T) {
	var d *xray.Daemon
	if rt := d.Transport(http.DefaultTransport); rt != http.DefaultTransport {
		t.Errorf("Transport without a daemon wrapped the transport: %T", rt)
	}
}
