// Package awsclient sets how the service's AWS clients meet faults: how many
// times and how long each retries, how long one attempt may wait for an
// answer, and which errors mean the dependency is unavailable (marked as
// fault.Unavailable, so that the HTTP handlers answer 503 and the event
// handlers leave the message to be retried). Package app gives each function
// the Profile of its kind (app.Function.Handler: Requests for an HTTP
// function, Events for the others); nothing here does network I/O.
package awsclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"genjobs/internal/fault"
)

// Policy is how one client retries. Every call also ends with its context:
// the handler's deadline bounds the sum of the attempts.
type Policy struct {
	// MaxAttempts counts the first attempt: 3 is two retries.
	MaxAttempts int
	// MaxBackoff caps the wait before a retry. The wait is drawn at random
	// (full jitter) below min(base·2^retry, MaxBackoff), the base being
	// 1 s after throttling and 50 ms after any other retryable error (the
	// SDK's 2026 retry rules, chosen here rather than left to its defaults).
	MaxBackoff time.Duration
	// ConnectTimeout bounds a TCP connect: an endpoint that drops packets
	// fails this attempt instead of using the whole deadline.
	ConnectTimeout time.Duration
	// ResponseHeaderTimeout fails an attempt whose answer has not begun
	// this long after the request was sent (a frozen server accepts the
	// connection and never answers); the attempt is then retried. It is
	// net/http's, counted per request from its last byte, so an upload's
	// own time does not count. (The SDK's WithReadTimeout is not used: its
	// window starts with the connection's idle read, so a request on a
	// connection idle for most of it gets only the rest.) Zero leaves the
	// attempt to the deadline alone. No call of ours long-polls.
	ResponseHeaderTimeout time.Duration
}

// Profile is the policies of a function's clients.
type Profile struct {
	DynamoDB, SQS, S3, KMS Policy
	// SecretsManager reads provider credentials (internal/secrets), once
	// per secret and execution environment.
	SecretsManager Policy
	// Cognito signs people in to the console (internal/cognito).
	Cognito Policy
}

// Requests is the profile of the HTTP functions (Timeout 10 s, deadline 9 s
// after fault.Reserve's margin): a dependency call, all attempts, takes at
// most 3 x 2 s without an answer + 2 x 1 s of backoff = 8 s, so the client
// gets its 503 before API Gateway gives up. DynamoDB, SQS, KMS and S3 begin
// to answer in milliseconds when well (S3 once it has an upload's last
// byte), so 2 s without an answer is an outage, not a slow answer.
var Requests = Profile{
	DynamoDB: requests, SQS: requests, S3: requests, KMS: requests, SecretsManager: requests, Cognito: requests,
}

var requests = Policy{MaxAttempts: 3, MaxBackoff: time.Second, ConnectTimeout: time.Second, ResponseHeaderTimeout: 2 * time.Second}

// Events is the profile of the event functions (worker 120 s, sweeper 60 s,
// notifier and deliverer 30 s; deadlines 3 s earlier): a failed attempt costs
// a redelivery minutes later, so a call retries longer, at most 5 x 3 s
// without an answer + 4 x 2 s of backoff = 23 s, inside the shortest
// deadline (27 s).
var Events = Profile{
	DynamoDB: background, SQS: background, S3: background, KMS: background, SecretsManager: background, Cognito: background,
}

var background = Policy{MaxAttempts: 5, MaxBackoff: 2 * time.Second, ConnectTimeout: time.Second, ResponseHeaderTimeout: 3 * time.Second}

// Config is cfg for the client of the service sdkID (s3.ServiceID, ...):
// at the endpoint cfg names for it (At), retrying, timing out and marking
// outages (also: the service's own classifiers, store.BusyTransaction) as
// p says. The SDK gives an aws.Config's retryer, HTTP client and middleware
// to every client its NewFromConfig builds, so each adapter builds its
// client as X.NewFromConfig(p.Config(cfg, X.ServiceID)), and naming no
// service client here links none into the functions that use this package.
func (p Policy) Config(cfg aws.Config, sdkID string, also ...Classifier) aws.Config {
	cfg = At(cfg, sdkID)
	cfg.Retryer, cfg.RetryMaxAttempts = p.Retryer, 0
	hc := cfg.HTTPClient
	if hc == nil {
		hc = awshttp.NewBuildableClient() // what the client would build
	}
	cfg.HTTPClient = p.HTTPClient(hc)
	cfg.APIOptions = p.APIOptions(cfg.APIOptions, also...)
	return cfg
}

// Retryer is the SDK retryer of p: the standard one (its retryable errors,
// its token bucket that stops retrying when most calls fail) with p's
// attempts and backoff. The zero Policy keeps the SDK's defaults.
func (p Policy) Retryer() aws.Retryer {
	if p.MaxAttempts == 0 {
		return retry.NewStandard()
	}
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = p.MaxAttempts
		o.MaxBackoff = p.MaxBackoff
		o.Backoff = retry.BackoffDelayerFunc(p.backoff)
	})
}

// Backoff bases (see MaxBackoff).
const (
	baseDelay         = 50 * time.Millisecond
	throttleBaseDelay = time.Second
)

var throttles = retry.IsErrorThrottles(retry.DefaultThrottles)

func (p Policy) backoff(attempt int, err error) (time.Duration, error) {
	base := baseDelay
	if throttles.IsErrorThrottle(err).Bool() {
		base = throttleBaseDelay
	}
	ceiling := p.MaxBackoff
	if attempt < 16 {
		ceiling = min(base<<attempt, p.MaxBackoff)
	}
	if ceiling <= 0 {
		return 0, nil
	}
	return rand.N(ceiling + 1), nil
}

// HTTPDoer is the HTTP client of every SDK service client.
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// HTTPClient applies p's timeouts to c, the SDK's buildable client (the
// default, and what config.LoadDefaultConfig gives, with AWS_CA_BUNDLE's
// roots when set: it is copied, never replaced). Any other client (a test's
// wrapper) is kept as it is: the deadline still bounds its calls.
func (p Policy) HTTPClient(c HTTPDoer) HTTPDoer {
	b, ok := c.(*awshttp.BuildableClient)
	if !ok {
		return c
	}
	if p.ResponseHeaderTimeout > 0 {
		b = b.WithTransportOptions(func(t *http.Transport) { t.ResponseHeaderTimeout = p.ResponseHeaderTimeout })
	}
	if p.ConnectTimeout > 0 {
		b = b.WithDialerOptions(func(d *net.Dialer) { d.Timeout = p.ConnectTimeout })
	}
	return b
}

// APIOptions adds to a client's middleware the marking of outage errors:
// those Classify sees, and those a service's own classifier sees (also:
// store.BusyTransaction for DynamoDB's cancelled transactions).
func (p Policy) APIOptions(opts []func(*middleware.Stack) error, also ...Classifier) []func(*middleware.Stack) error {
	m := marking{also: also}
	addMarking := func(s *middleware.Stack) error {
		// First in the stack, so it sees the error after every retry.
		return s.Initialize.Add(m, middleware.Before)
	}
	// A copy: the slice may share its array with the client it came from.
	return append(append([]func(*middleware.Stack) error(nil), opts...), addMarking, addTracing)
}

// Classifier reports whether err means a dependency is unavailable now, and
// the code to log.
type Classifier func(err error) (code string, unavailable bool)

// marking wraps an operation's outage errors in fault.Unavailable.
type marking struct{ also []Classifier }

func (marking) ID() string { return "genjobs.MarkUnavailable" }

func (m marking) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error,
) {
	out, md, err := next.HandleInitialize(ctx, in)
	if code, ok := Classify(err, m.also...); ok {
		if ctx.Err() != nil { // the caller's deadline, not an attempt's timeout
			code = "DeadlineExceeded"
			if errors.Is(ctx.Err(), context.Canceled) {
				code = "Canceled"
			}
		}
		err = &fault.Unavailable{Code: code, Err: err}
	}
	return out, md, err
}

// unavailableCodes are the error codes of a dependency that cannot serve the
// call now: the SDK's throttling codes, and the server-side and timeout codes
// of DynamoDB, SQS, S3, KMS and Secrets Manager (most arrive with a 5xx
// status as well).
var unavailableCodes = func() map[string]bool {
	codes := map[string]bool{
		"RequestTimeout": true, "RequestTimeoutException": true,
		"TransactionConflictException": true, // a write met a transaction on its item
		"InternalServerError":          true, "InternalFailure": true, "InternalError": true,
		"ServiceUnavailable": true, "ServiceUnavailableException": true,
		"KMSInternalException": true, "DependencyTimeoutException": true, "KeyUnavailableException": true,
		"InternalServiceError": true, // Secrets Manager's
	}
	for c := range retry.DefaultThrottleErrorCodes {
		codes[c] = true
	}
	return codes
}()

// Classify reports whether err means the dependency is unavailable now, and
// the code to log: an API code (ThrottlingException, SlowDown,
// ProvisionedThroughputExceededException, ...), a 5xx status, a network or
// timeout failure, an exhausted retry quota, or the caller's context ending;
// or what one of also reports first (a service's own errors). Anything else
// (a refusal, a missing table, a bad request: our bug or the client's
// mistake) is not.
func Classify(err error, also ...Classifier) (code string, unavailable bool) {
	if err == nil {
		return "", false
	}
	for _, c := range also {
		if code, ok := c(err); ok {
			return code, true
		}
	}
	var api smithy.APIError
	if errors.As(err, &api) && unavailableCodes[api.ErrorCode()] {
		return api.ErrorCode(), true
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && (status.HTTPStatusCode() >= 500 || status.HTTPStatusCode() == http.StatusTooManyRequests) {
		if api != nil && api.ErrorCode() != "" {
			return api.ErrorCode(), true
		}
		return fmt.Sprintf("HTTP %d", status.HTTPStatusCode()), true
	}
	if api != nil {
		return "", false // the service answered, and refused
	}
	var cancelled interface{ CanceledError() bool }
	var quota ratelimit.QuotaExceededError
	var timeout interface{ Timeout() bool }
	var netErr net.Error
	var send *smithyhttp.RequestSendError
	switch {
	case errors.As(err, &cancelled) && cancelled.CanceledError(): // the SDK saw the context end
		if errors.Is(err, context.DeadlineExceeded) {
			return "DeadlineExceeded", true
		}
		return "Canceled", true
	case errors.As(err, &quota):
		return "RetryQuotaExceeded", true
	case errors.As(err, &timeout) && timeout.Timeout():
		// A connect or response timeout (net/http's says it Is
		// context.DeadlineExceeded too, hence before the context's cases).
		return "Timeout", true
	case errors.Is(err, context.DeadlineExceeded):
		return "DeadlineExceeded", true
	case errors.Is(err, context.Canceled):
		return "Canceled", true
	case errors.As(err, &netErr), errors.As(err, &send), errors.Is(err, io.ErrUnexpectedEOF):
		return "NetworkError", true
	}
	return "", false
}
