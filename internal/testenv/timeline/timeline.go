// Package timeline notes where one request's time goes, for the benches'
// BENCH_TRACE=1: while it is on, a Timeline records every AWS call of the
// clients it is a middleware of, every HTTP request through its Transport,
// and the marks its caller adds, then prints them in order of their start.
// `go run ./infra/bench` and the provider benchmarks share it.
package timeline

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/middleware"
)

// Enabled says whether BENCH_TRACE asks for the timelines.
func Enabled() bool { return os.Getenv("BENCH_TRACE") != "" }

// Timeline is one timeline; the zero value is off.
type Timeline struct {
	on    atomic.Bool
	mu    sync.Mutex
	spans []span
}

type span struct {
	what       string
	start, end time.Time
}

// Middleware notes each AWS call's operation, start and end.
func (t *Timeline) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchTrace",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if !t.on.Load() {
				return next.HandleInitialize(ctx, in)
			}
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			t.add(middleware.GetServiceID(ctx)+"."+middleware.GetOperationName(ctx), start, time.Now())
			return out, md, err
		}), middleware.Before)
}

// Transport wraps rt so that each request is noted, from its start to its
// answer's headers.
func (t *Timeline) Transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !t.on.Load() {
			return rt.RoundTrip(r)
		}
		start := time.Now()
		resp, err := rt.RoundTrip(r)
		t.add(fmt.Sprintf("HTTP %s %s (to the headers)", r.Method, r.URL.Path), start, time.Now())
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Mark notes an instant of the caller's own (a creation answered, a
// handler invoked).
func (t *Timeline) Mark(what string, at time.Time) {
	if t.on.Load() {
		t.add(what, at, at)
	}
}

func (t *Timeline) add(what string, start, end time.Time) {
	t.mu.Lock()
	t.spans = append(t.spans, span{what, start, end})
	t.mu.Unlock()
}

// Start clears the timeline and turns the notes on.
func (t *Timeline) Start() {
	t.mu.Lock()
	t.spans = nil
	t.mu.Unlock()
	t.on.Store(true)
}

// Print turns the notes off and writes the timeline, from origin, to w.
func (t *Timeline) Print(w io.Writer, title string, origin time.Time) {
	t.on.Store(false)
	t.mu.Lock()
	spans := append([]span(nil), t.spans...)
	t.mu.Unlock()
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Fprintf(w, "trace: %s (start and duration in ms)\n", title)
	for _, s := range spans {
		if s.end.Equal(s.start) {
			fmt.Fprintf(w, "  %8.1f           %s\n", ms(s.start.Sub(origin)), s.what)
			continue
		}
		fmt.Fprintf(w, "  %8.1f %8.1f  %s\n", ms(s.start.Sub(origin)), ms(s.end.Sub(s.start)), s.what)
	}
}
