// Package triggers plays the event sources of template.yaml on one machine,
// the way package apigw plays its HTTP API: an SQS event source mapping
// per function event of type SQS (SQSPoller, with Lambda's batch, partial
// failure, timeout and retry semantics, against the real queue on fauxqs),
// a DynamoDB stream mapping per event of type DynamoDB (StreamPoller, on
// the real stream of DynamoDB Local, with Lambda's filters, batches,
// partial failures, bisection, retries and on-failure destination) and an
// EventBridge schedule per event of type Schedule (Schedule, at a
// compressed local interval). Start walks the template and starts them all.
//
// Where the local play differs from AWS, on purpose:
//
//   - Every schedule fires every Options.ScheduleEvery (5 s by default),
//     whatever its rate, and once at start; cron expressions are refused.
//     One invocation of a schedule runs at a time, and EventBridge's retries
//     are not played.
//   - An invocation past its function's timeout is abandoned (counted as
//     failed, its context done) but its goroutine cannot be killed: the
//     handler runs on until it returns, and what it writes meanwhile is
//     written.
//   - A mapping runs a fixed number of pollers (Options.Pollers) instead of
//     scaling out, and Lambda's 6 MB limit on a batch's payload is not
//     applied.
//   - A stream is polled every Options.StreamIdleWait (20 ms) rather than
//     four times a second, so that records reach the handler sooner; a
//     ParallelizationFactor above 1 and tumbling windows are refused.
//     DynamoDB Local rounds ApproximateCreationDateTime down to the minute
//     (the handler gets it as the stream gives it): a record's age for
//     MaximumRecordAgeInSeconds is counted from the end of that minute, or
//     from when it was read if sooner. Its records say region "ddblocal".
//   - A stream mapping's position is kept in Options.CheckpointDir (the
//     runner of `make run` uses .local/streams), or in memory: without the
//     file a restart reads from StartingPosition again.
//   - FilterCriteria on an SQS mapping, and a schedule's Input, are refused
//     rather than played approximately; a stream mapping's filters are
//     played, with the operators Lambda's filters have.
package triggers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"genjobs/infra/local/sam"
	"genjobs/internal/emulator"
)

// DefaultTimeout is Lambda's function timeout when the template sets none.
const DefaultTimeout = 3 * time.Second

// localAccount is the account id fauxqs and the gateway use.
const localAccount = "000000000000"

// ErrAbandoned is the error of an invocation that ran past its function's
// timeout: Lambda stops such an invocation and counts it as failed. Locally
// the handler's goroutine cannot be stopped; its context is done, and
// whatever it returns later is ignored.
var ErrAbandoned = errors.New("invocation abandoned at the function's timeout")

// FunctionTimeout is the function's Timeout, or Lambda's default of 3 s.
func FunctionTimeout(f sam.Function) time.Duration {
	if f.Timeout <= 0 {
		return DefaultTimeout
	}
	return time.Duration(f.Timeout) * time.Second
}

// invocation is one call of a handler.
type invocation struct {
	RequestID string
	// Done is closed when the handler has returned, which for an abandoned
	// invocation may be long after invoke returned.
	Done <-chan struct{}
}

// invoke calls fn the way Lambda runs an invocation: under a context that
// carries the Lambda context and ends at the function's timeout, not when
// parent is cancelled (stopping the runner lets in-flight invocations
// finish); a panic is an invocation error; past the timeout the invocation
// is abandoned with ErrAbandoned.
func invoke[T any](parent context.Context, function, region string, timeout time.Duration, fn func(context.Context) (T, error)) (T, invocation, error) {
	id := newRequestID()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), timeout)
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       id,
		InvokedFunctionArn: fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", region, localAccount, function),
	})
	type result struct {
		v   T
		err error
	}
	results := make(chan result, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		defer func() {
			if p := recover(); p != nil {
				results <- result{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		v, err := fn(ctx)
		results <- result{v, err}
	}()
	inv := invocation{RequestID: id, Done: done}
	select {
	case r := <-results:
		return r.v, inv, r.err
	case <-ctx.Done():
		select {
		case r := <-results: // returned just in time
			return r.v, inv, r.err
		default:
			var zero T
			return zero, inv, ErrAbandoned
		}
	}
}

// newRequestID returns a random UUID, as Lambda's request ids are.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// arnRegion returns the region of an ARN (arn:aws:sqs:REGION:ACCOUNT:NAME),
// else the local stack's.
func arnRegion(arn string) string {
	if parts := strings.Split(arn, ":"); len(parts) >= 6 && parts[3] != "" {
		return parts[3]
	}
	return emulator.Region
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
