// Package logging is the functions' log: one JSON object a line on standard
// output, at the level Lambda's LoggingConfig asks for, each line carrying
// what AWS Lambda Powertools puts on its lines: the Lambda request id
// (function_request_id), the X-Ray trace id (xray_trace_id) and whether the
// invocation was the execution environment's first (cold_start).
//
// It is a slog.Handler of a few lines rather than a library: the Go module
// proxy has no Powertools for Go, and aws-lambda-go's own
// lambdacontext.NewLogHandler reads the request id from the context of a
// *Context call only, while the service's log calls (slog's Info, Warn,
// Error) mostly carry none. Lambda runs one invocation at a time in an
// execution environment (AWS_LAMBDA_MAX_CONCURRENCY unset), so the handler
// takes the ids of the invocation under way when the call's context has
// none.
package logging

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Level is the level of the application's logs Lambda's LoggingConfig sets
// (ApplicationLogLevel, given to the function as AWS_LAMBDA_LOG_LEVEL):
// TRACE and DEBUG are debug, FATAL is above error; unset or unknown, info
// (Lambda's own default).
func Level(getenv func(string) string) slog.Level {
	switch strings.ToUpper(getenv("AWS_LAMBDA_LOG_LEVEL")) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug
	case "WARN":
		return slog.LevelWarn
	case "ERROR":
		return slog.LevelError
	case "FATAL":
		return slog.LevelError + 4
	}
	return slog.LevelInfo
}

// LevelName is the name Lambda reads in a line's "level" for l.
func LevelName(l slog.Level) string {
	if l > slog.LevelError {
		return "FATAL"
	}
	return l.String()
}

// Invocation is what a log line says of the invocation it was written in.
type Invocation struct {
	RequestID string // Lambda's, as in its START and REPORT lines
	TraceID   string // the X-Ray trace's Root, 1-5759e988-bd862e3fe1be46a994272793
	ColdStart bool   // the first invocation of this execution environment
}

// Invocations follows the invocations of one execution environment.
type Invocations struct {
	// concurrent: the environment runs several invocations at once, so
	// only a call's own context can say which one a line belongs to.
	concurrent bool
	first      atomic.Pointer[string] // the first invocation's request id
	current    atomic.Pointer[Invocation]
}

// NewInvocations follows the invocations of this execution environment;
// maxConcurrency is lambdacontext.MaxConcurrency().
func NewInvocations(maxConcurrency int) *Invocations {
	return &Invocations{concurrent: maxConcurrency > 1}
}

// Begin records the start of the invocation whose context is ctx (as
// aws-lambda-go makes it) and returns it; end marks its end.
func (v *Invocations) Begin(ctx context.Context) (inv Invocation, end func()) {
	inv = fromContext(ctx)
	inv.ColdStart = v.first.CompareAndSwap(nil, &inv.RequestID)
	if v.concurrent {
		return inv, func() {}
	}
	v.current.Store(&inv)
	return inv, func() { v.current.Store(nil) }
}

func fromContext(ctx context.Context) Invocation {
	var inv Invocation
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		inv.RequestID = lc.AwsRequestID
	}
	// aws-lambda-go's key for the invocation's X-Ray header,
	// "Root=1-...;Parent=...;Sampled=1".
	header, _ := ctx.Value("x-amzn-trace-id").(string)
	for part := range strings.SplitSeq(header, ";") {
		if root, ok := strings.CutPrefix(part, "Root="); ok {
			inv.TraceID = root
		}
	}
	return inv
}

// New returns a logger writing JSON lines to w at level, each line written
// during an invocation carrying its ids (v may be nil: none).
func New(w io.Writer, level slog.Leveler, v *Invocations) *slog.Logger {
	return slog.New(&handler{Handler: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}), v: v})
}

type handler struct {
	slog.Handler
	v *Invocations
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	inv, ok := h.invocation(ctx)
	if ok {
		r.AddAttrs(slog.Bool("cold_start", inv.ColdStart))
		if inv.RequestID != "" {
			r.AddAttrs(slog.String("function_request_id", inv.RequestID))
		}
		if inv.TraceID != "" {
			r.AddAttrs(slog.String("xray_trace_id", inv.TraceID))
		}
	}
	return h.Handler.Handle(ctx, r)
}

// invocation is the one a line belongs to: the call's context's, else
// the one under way.
func (h *handler) invocation(ctx context.Context) (Invocation, bool) {
	if h.v == nil {
		return Invocation{}, false
	}
	if ctx != nil {
		if inv := fromContext(ctx); inv.RequestID != "" {
			first := h.v.first.Load()
			inv.ColdStart = first != nil && *first == inv.RequestID
			return inv, true
		}
	}
	cur := h.v.current.Load()
	if cur == nil {
		return Invocation{}, false
	}
	return *cur, true
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{Handler: h.Handler.WithAttrs(attrs), v: h.v}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{Handler: h.Handler.WithGroup(name), v: h.v}
}
