package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/app"
	"genjobs/internal/awsclient"
)

// A builder does not choose how its clients retry: the kind of its
// function does. An HTTP function's clients give up within API Gateway's
// deadline (awsclient.Requests); an event function's retry longer
// (awsclient.Events), and its handler stops app.EventMargin before the
// invocation's deadline, to report what it could not do.
func TestTheKindOfAFunctionSetsItsRetriesAndMargin(t *testing.T) {
	var got awsclient.Profile
	var margin time.Duration
	invocation := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		return ctx
	}
	seen := func(ctx context.Context) {
		outer, _ := ctx.Value(outerKey{}).(time.Time)
		inner, _ := ctx.Deadline()
		margin = outer.Sub(inner)
	}
	call := func(ctx context.Context) context.Context {
		dl, _ := ctx.Deadline()
		return context.WithValue(ctx, outerKey{}, dl)
	}
	for _, c := range []struct {
		name   string
		f      app.Function
		invoke func(app.Handler)
		want   awsclient.Profile
		margin time.Duration
	}{
		{"http", app.Function{HTTP: func(d app.Deps) (http.Handler, error) {
			got = d.Retries
			return http.NotFoundHandler(), nil
		}}, func(app.Handler) {}, awsclient.Requests, 0},
		{"sqs", app.Function{SQS: func(d app.Deps) (app.SQSHandler, error) {
			got = d.Retries
			return func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
				seen(ctx)
				return events.SQSEventResponse{}, nil
			}, nil
		}}, func(h app.Handler) { _, _ = h.SQS(call(invocation()), events.SQSEvent{}) }, awsclient.Events, app.EventMargin},
		{"schedule", app.Function{Schedule: func(d app.Deps) (app.ScheduleHandler, error) {
			got = d.Retries
			return func(ctx context.Context, _ events.EventBridgeEvent) error {
				seen(ctx)
				return nil
			}, nil
		}}, func(h app.Handler) { _ = h.Schedule(call(invocation()), events.EventBridgeEvent{}) }, awsclient.Events, app.EventMargin},
		{"stream", app.Function{Stream: func(d app.Deps) (app.StreamHandler, error) {
			got = d.Retries
			return func(ctx context.Context, _ events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				seen(ctx)
				return events.DynamoDBEventResponse{}, nil
			}, nil
		}}, func(h app.Handler) { _, _ = h.Stream(call(invocation()), events.DynamoDBEvent{}) }, awsclient.Events, app.EventMargin},
	} {
		got, margin = awsclient.Profile{}, 0
		h, err := c.f.Handler(app.Deps{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		c.invoke(h)
		if got != c.want {
			t.Errorf("%s: the builder got retries %+v; want %+v", c.name, got, c.want)
		}
		if margin != c.margin {
			t.Errorf("%s: the handler's deadline is %s before the invocation's; want %s", c.name, margin, c.margin)
		}
	}
	if _, err := (app.Function{}).Handler(app.Deps{}); err == nil {
		t.Error("a Function without a builder built a handler")
	}
}

type outerKey struct{}
