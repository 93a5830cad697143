package app

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/awsclient"
	"genjobs/internal/fault"
	"genjobs/internal/httpapi"
)

// Function is one Lambda function: its builder, exactly one of the four,
// whose field says what kind of function it is.
type Function struct {
	HTTP     func(Deps) (http.Handler, error)
	SQS      func(Deps) (SQSHandler, error)
	Schedule func(Deps) (ScheduleHandler, error)
	Stream   func(Deps) (StreamHandler, error)
}

// SQSHandler handles a batch of an SQS event source mapping.
type SQSHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// ScheduleHandler handles a scheduled EventBridge event.
type ScheduleHandler = func(context.Context, events.EventBridgeEvent) error

// StreamHandler handles a batch of a DynamoDB stream event source mapping.
type StreamHandler = func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// Handler is a function's built handler: the one of its kind.
type Handler struct {
	HTTP     http.Handler
	SQS      SQSHandler
	Schedule ScheduleHandler
	Stream   StreamHandler
}

// Handler builds f's handler from d. It is the one place where a
// function's kind decides what its builder does not: an HTTP function's
// clients retry as awsclient.Requests (within API Gateway's deadline), an
// event function's as awsclient.Events, and an event handler keeps
// EventMargin of its time. Lambda, the local runner and the tests all build
// through it.
func (f Function) Handler(d Deps) (Handler, error) {
	var h Handler
	var err error
	switch {
	case f.HTTP != nil:
		d.Retries = awsclient.Requests
		h.HTTP, err = f.HTTP(d)
	case f.SQS != nil:
		d.Retries = awsclient.Events
		var sh SQSHandler
		if sh, err = f.SQS(d); err == nil {
			h.SQS = withMargin(sh)
		}
	case f.Schedule != nil:
		d.Retries = awsclient.Events
		var sh ScheduleHandler
		if sh, err = f.Schedule(d); err == nil {
			h.Schedule = func(ctx context.Context, e events.EventBridgeEvent) error {
				ctx, cancel := fault.Reserve(ctx, EventMargin)
				defer cancel()
				return sh(ctx, e)
			}
		}
	case f.Stream != nil:
		d.Retries = awsclient.Events
		var sh StreamHandler
		if sh, err = f.Stream(d); err == nil {
			h.Stream = withMargin(sh)
		}
	default:
		err = errors.New("no builder given")
	}
	if err != nil {
		return Handler{}, err
	}
	return h, nil
}

// FunctionName is the functions/ directory of a template logical id:
// WorkerFunction -> worker, OpenAPIFunction -> openapi.
func FunctionName(logicalID string) string {
	return strings.ToLower(strings.TrimSuffix(logicalID, "Function"))
}

// EventMargin is what an event handler keeps of its time, before the
// invocation's deadline, to report what it could not do (the worker's last
// writes take at most worker.CleanupTimeout of it): a message whose work
// ran out of time is reported failed, never abandoned with the batch.
const EventMargin = 3 * time.Second

// withMargin runs an SQS or stream handler under a context that ends
// EventMargin before the invocation's deadline (fault.Reserve).
func withMargin[E, R any](h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		ctx, cancel := fault.Reserve(ctx, EventMargin)
		defer cancel()
		return h(ctx, e)
	}
}

// OnFirstUse serves with the handler build makes on its first request: for
// the part of a function few of its starts serve (the console's
// playground, the MCP function's tools), so that a start does not pay for
// it. A build that fails answers every request with the fixed internal
// error, logged as what failed with the request's id.
func OnFirstUse(what string, build func() (http.Handler, error)) http.Handler {
	return &firstUse{what: what, build: build}
}

type firstUse struct {
	what  string
	build func() (http.Handler, error)
	once  sync.Once
	h     http.Handler
	err   error
}

func (f *firstUse) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.once.Do(func() { f.h, f.err = f.build() })
	if f.err != nil {
		httpapi.InternalError(w, r, f.what, f.err)
		return
	}
	f.h.ServeHTTP(w, r)
}
