package provider_test

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

// callTrace notes, while it is on, every AWS call of the env's clients,
// every HTTP request of the steps and the callbacks (to the providers'
// fakes and the output files), and the marks the benchmarks add, so that
// BENCH_TRACE=1 prints where the last timed iteration's time went, as
// `BENCH_TRACE=1 go run ./infra/bench` does for the functions.
type callTrace struct {
	on    atomic.Bool
	mu    sync.Mutex
	spans []traceSpan
}

type traceSpan struct {
	what       string
	start, end time.Time
}

// benchTracing says whether BENCH_TRACE asks for the timelines.
func benchTracing() bool { return os.Getenv("BENCH_TRACE") != "" }

// middleware notes each AWS call's operation, start and end.
func (t *callTrace) middleware(stack *middleware.Stack) error {
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

// transport wraps rt so that each request is noted, from its start to its
// answer's headers.
func (t *callTrace) transport(rt http.RoundTripper) http.RoundTripper {
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

// mark notes an instant of the benchmark's own.
func (t *callTrace) mark(what string) {
	if t.on.Load() {
		now := time.Now()
		t.add(what, now, now)
	}
}

func (t *callTrace) add(what string, start, end time.Time) {
	t.mu.Lock()
	t.spans = append(t.spans, traceSpan{what, start, end})
	t.mu.Unlock()
}

// start clears the timeline and turns the notes on.
func (t *callTrace) start() {
	t.mu.Lock()
	t.spans = nil
	t.mu.Unlock()
	t.on.Store(true)
}

// print turns the notes off and writes the timeline, from origin, to w.
func (t *callTrace) print(w io.Writer, title string, origin time.Time) {
	t.on.Store(false)
	t.mu.Lock()
	spans := append([]traceSpan(nil), t.spans...)
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
