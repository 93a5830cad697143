package testenv

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Loss is what Lossy does to the answer of a write it has forwarded: the
// write is applied, and the caller does not learn it.
type Loss int

const (
	// Reset closes the connection with a TCP reset instead of answering,
	// as a network failure after the request reached the service does.
	Reset Loss = iota
	// ServerError answers 500 InternalServerError, which the SDK retries.
	ServerError
	// Delay holds the answer back for Lossy.Delay, then sends it: a slow
	// answer, during which other writers go on.
	Delay
)

func (l Loss) String() string {
	return [...]string{"reset", "500", "delay"}[l]
}

// Lossy is a proxy in front of DynamoDB Local that forwards every call and,
// for the first attempt of a write Choose names, loses its answer after the
// write has been applied: the fault a retry meets its own success in. A
// retry (the SDK's amz-sdk-request attempt > 1) always passes, so each lost
// answer is one retry that finds its own write. Point a client's
// BaseEndpoint at URL.
type Lossy struct {
	URL string
	// Delay is how long a Delay answer is held back.
	Delay time.Duration
	// Losses are the kinds drawn from (all three unless set before the
	// first call).
	Losses []Loss
	// LoseFirst loses the answer of the first first attempt of each path
	// whatever the rate, so that every path a run reaches is injected at
	// least once (Injected tells).
	LoseFirst bool

	choose func(op string, body []byte) (path string, rate float64)

	mu     sync.Mutex
	rnd    *rand.Rand
	counts map[string]map[string]int // path -> loss or "passed" -> calls
}

// NewLossy starts a proxy to upstream (http://host:port), stopped when the
// test ends. choose names the write path of a call (op is the DynamoDB
// action, body its JSON) and the probability of losing its answer; an
// empty path passes the call untouched. seed makes the draws repeatable.
func NewLossy(t testing.TB, upstream string, seed uint64, choose func(op string, body []byte) (path string, rate float64)) *Lossy {
	t.Helper()
	l := &Lossy{Delay: 1500 * time.Millisecond, choose: choose,
		rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), counts: map[string]map[string]int{}}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		op := Operation(r)
		path, rate := l.choose(op, body)
		loss, lose := l.draw(path, rate, firstAttempt(r))
		req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if lose {
			switch loss {
			case Reset:
				resetConn(w)
				return
			case ServerError:
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`))
				return
			case Delay:
				select {
				case <-time.After(l.Delay):
				case <-r.Context().Done():
					return
				}
			}
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	l.URL = srv.URL
	t.Cleanup(srv.Close)
	return l
}

// draw decides the fate of one call of path.
func (l *Lossy) draw(path string, rate float64, first bool) (Loss, bool) {
	if path == "" {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts[path] == nil {
		l.counts[path] = map[string]int{}
	}
	lost := l.counts[path][Reset.String()] + l.counts[path][ServerError.String()] + l.counts[path][Delay.String()]
	if !first || l.rnd.Float64() >= rate && (!l.LoseFirst || lost > 0) {
		l.counts[path]["passed"]++
		return 0, false
	}
	kinds := l.Losses
	if len(kinds) == 0 {
		kinds = []Loss{Reset, ServerError, Delay}
	}
	loss := kinds[l.rnd.IntN(len(kinds))]
	l.counts[path][loss.String()]++
	return loss, true
}

// Injected is how many answers of path were lost, of every kind.
func (l *Lossy) Injected(path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.counts[path]
	return c[Reset.String()] + c[ServerError.String()] + c[Delay.String()]
}

// Lost is how many answers of path were lost with loss.
func (l *Lossy) Lost(path string, loss Loss) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[path][loss.String()]
}

// Table is the injections so far, one line per write path: calls passed
// and answers lost by kind.
func (l *Lossy) Table() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	paths := make([]string, 0, len(l.counts))
	for p := range l.counts {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %8s %6s %6s %6s\n", "write path", "passed", "reset", "500", "delay")
	for _, p := range paths {
		c := l.counts[p]
		fmt.Fprintf(&b, "%-28s %8d %6d %6d %6d\n", p, c["passed"], c["reset"], c["500"], c["delay"])
	}
	return b.String()
}

// firstAttempt: the SDK numbers its attempts in amz-sdk-request
// ("attempt=1; max=3"); a call without the header counts as a first.
func firstAttempt(r *http.Request) bool {
	h := r.Header.Get("Amz-Sdk-Request")
	return h == "" || strings.Contains(h, "attempt=1;") || strings.HasSuffix(h, "attempt=1")
}

// resetConn ends the connection with a TCP RST, no answer written.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
