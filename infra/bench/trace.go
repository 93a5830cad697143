package main

import (
	"context"
	"time"

	"genjobs/internal/testenv/timeline"
)

// traced wraps an event handler (an SQS or a stream handler) so that t
// marks when each invocation of function began and returned.
func traced[E, R any](t *timeline.Timeline, function string, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		t.Mark(function+" invoked", time.Now())
		defer func() { t.Mark(function+" returned", time.Now()) }()
		return h(ctx, e)
	}
}
