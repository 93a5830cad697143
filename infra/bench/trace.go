package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/middleware"
)

// tracer notes, while it is on, every AWS call of the clients it is a
// middleware of (the functions' and the trigger runner's) and the marks the
// bench adds, so that BENCH_TRACE=1 prints where one job's time goes: the
// last job of the queue phase, and the last webhook.
type tracer struct {
	on    atomic.Bool
	mu    sync.Mutex
	spans []span
}

type span struct {
	what       string
	start, end time.Time
}

// tracing says whether BENCH_TRACE asks for the timelines.
func tracing() bool { return os.Getenv("BENCH_TRACE") != "" }

// middleware notes each call's operation, start and end.
func (t *tracer) middleware(stack *middleware.Stack) error {
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

// mark notes an instant of the bench's own (a creation answered, a
// handler invoked).
func (t *tracer) mark(what string, at time.Time) {
	if t.on.Load() {
		t.add(what, at, at)
	}
}

func (t *tracer) add(what string, start, end time.Time) {
	t.mu.Lock()
	t.spans = append(t.spans, span{what, start, end})
	t.mu.Unlock()
}

// start clears the timeline and turns the notes on.
func (t *tracer) start() {
	t.mu.Lock()
	t.spans = nil
	t.mu.Unlock()
	t.on.Store(true)
}

// print turns the notes off and writes the timeline, from origin, to w.
func (t *tracer) print(w io.Writer, title string, origin time.Time) {
	t.on.Store(false)
	t.mu.Lock()
	spans := append([]span(nil), t.spans...)
	t.mu.Unlock()
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	fmt.Fprintf(w, "trace: %s (start and duration in ms)\n", title)
	for _, s := range spans {
		if s.end.Equal(s.start) {
			fmt.Fprintf(w, "  %8.1f           %s\n", ms64(s.start.Sub(origin)), s.what)
			continue
		}
		fmt.Fprintf(w, "  %8.1f %8.1f  %s\n", ms64(s.start.Sub(origin)), ms64(s.end.Sub(s.start)), s.what)
	}
}

// traced wraps an event handler (an SQS or a stream handler) so that t
// marks when each invocation of function began and returned.
func traced[E, R any](t *tracer, function string, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		t.mark(function+" invoked", time.Now())
		defer func() { t.mark(function+" returned", time.Now()) }()
		return h(ctx, e)
	}
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
