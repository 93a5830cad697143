package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"genjobs/client"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func localStack(t *testing.T) *devstacktest.Stack {
	t.Helper()
	return devstacktest.Start(t)
}

// recorded is what a proxy saw of one request.
type recorded struct {
	Method, Path, IdempotencyKey string
	Status                       int // 0 when the proxy answered no status (a reset)
	Replayed                     string
}

// faultProxy stands between the client and the API on 127.0.0.1 and
// injects faults: hook, when set, may answer a request itself.
type faultProxy struct {
	URL string
	rp  *httputil.ReverseProxy

	mu   sync.Mutex
	seen []recorded
	hook func(w http.ResponseWriter, r *http.Request, n int) (handled bool)
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{rp: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// setHook installs a fault; n counts the requests seen so far (from 0).
func (p *faultProxy) setHook(h func(w http.ResponseWriter, r *http.Request, n int) bool) {
	p.mu.Lock()
	p.hook = h
	p.mu.Unlock()
}

func (p *faultProxy) requests() []recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]recorded(nil), p.seen...)
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	n, hook := len(p.seen), p.hook
	p.seen = append(p.seen, recorded{Method: r.Method, Path: r.URL.Path, IdempotencyKey: r.Header.Get("Idempotency-Key")})
	p.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w}
	if hook == nil || !hook(sw, r, n) {
		p.rp.ServeHTTP(sw, r)
	}
	p.mu.Lock()
	p.seen[n].Status, p.seen[n].Replayed = sw.status, sw.Header().Get("Idempotent-Replayed")
	p.mu.Unlock()
}

// forwardThenReset lets the API handle r whole, then resets the client's
// connection instead of answering: the request took effect, its answer is
// lost.
func (p *faultProxy) forwardThenReset(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // RST, not FIN
	}
	conn.Close()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// sleeps records the waits a client asked for and returns at once (or
// with the context's error).
type sleeps struct {
	mu  sync.Mutex
	got []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.got = append(s.got, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.got...)
}

// newClient is a client of url with token whose waits are recorded, not
// slept.
func newClient(t *testing.T, url, token string, opts ...client.Option) (*client.Client, *sleeps) {
	t.Helper()
	s := &sleeps{}
	c, err := client.NewClient(append([]client.Option{client.WithBaseURL(url), client.WithToken(token), client.WithSleep(s.sleep)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}
