// Package fault names the failures that are nobody's mistake: a dependency
// (DynamoDB, SQS, S3, KMS) throttled, timed out, unreachable or failing
// server-side, or the handler's own deadline reached. The adapters mark such
// errors (package awsclient classifies the SDK's); the HTTP handlers answer
// them 503 with Retry-After, the event handlers leave the message to be
// retried. It imports no AWS package, so domain code can recognise an outage.
package fault

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable is what every marked error Is: a dependency could not serve
// the call now, and the same call later may well succeed.
var ErrUnavailable = errors.New("a dependency is temporarily unavailable")

// Unavailable is a dependency's error marked as an outage. Code is the
// dependency's own name for it (ThrottlingException, SlowDown, HTTP 503,
// network, ...), for the logs; Err is the error as the adapter got it, so
// errors.As still finds the SDK's types through it.
type Unavailable struct {
	Code string
	Err  error
}

func (e *Unavailable) Error() string { return e.Err.Error() }

func (e *Unavailable) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) hold for every marked error.
func (e *Unavailable) Is(target error) bool { return target == ErrUnavailable }

// IsUnavailable reports whether err is an outage rather than a bug or a
// refusal: a marked dependency error, or a context that ran out (the
// handler's deadline, which every dependency call inherits) or was
// cancelled (nobody waits for the answer any more).
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

// Code names an outage for the logs: the dependency's code, else
// DeadlineExceeded or Canceled; empty when err is not an outage.
func Code(err error) string {
	var u *Unavailable
	switch {
	case errors.As(err, &u):
		return u.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "DeadlineExceeded"
	case errors.Is(err, context.Canceled):
		return "Canceled"
	}
	return ""
}

// Reserve returns a context that ends margin before ctx's deadline, keeping
// that time for the handler to answer (an HTTP 503, a batch's failures)
// after its dependencies gave up. When the deadline is closer than four
// margins, a quarter of what is left is kept instead. A context without a
// deadline (a direct call in a test) is returned as it is.
func Reserve(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin = min(margin, time.Until(deadline)/4)
	return context.WithDeadline(ctx, deadline.Add(-margin))
}
