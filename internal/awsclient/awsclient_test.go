package awsclient_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"genjobs/internal/awsclient"
	"genjobs/internal/fault"
	"genjobs/internal/store"
)

func httpError(status int, err error) error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: err,
	}}
}

func apiError(code string) error { return &smithy.GenericAPIError{Code: code, Message: "m"} }

func cancelled(reasons ...string) error {
	tce := &types.TransactionCanceledException{}
	for _, r := range reasons {
		tce.CancellationReasons = append(tce.CancellationReasons, types.CancellationReason{Code: aws.String(r)})
	}
	return httpError(400, tce)
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		code string // empty: not an outage
	}{
		{"throttling", httpError(400, apiError("ThrottlingException")), "ThrottlingException"},
		{"throughput", httpError(400, apiError("ProvisionedThroughputExceededException")), "ProvisionedThroughputExceededException"},
		{"request limit", httpError(400, apiError("RequestLimitExceeded")), "RequestLimitExceeded"},
		{"S3 slow down", httpError(503, apiError("SlowDown")), "SlowDown"},
		{"write met a transaction", httpError(400, apiError("TransactionConflictException")), "TransactionConflictException"},
		{"throttled transaction", cancelled("None", "ThrottlingError"), "TransactionCanceledException/ThrottlingError"},
		{"conflicting transaction", cancelled("TransactionConflict", "None"), "TransactionCanceledException/TransactionConflict"},
		{"refused transaction", cancelled("None", "ConditionalCheckFailed"), ""},
		{"server error", httpError(500, apiError("InternalServerError")), "InternalServerError"},
		{"bare 503", httpError(503, errors.New("not JSON")), "HTTP 503"},
		{"KMS dependency timeout", httpError(503, apiError("DependencyTimeoutException")), "DependencyTimeoutException"},
		{"Secrets Manager internal error", httpError(500, apiError("InternalServiceError")), "InternalServiceError"},
		{"retries exhausted", &retry.MaxAttemptsError{Attempt: 3, Err: httpError(400, apiError("ThrottlingException"))}, "ThrottlingException"},
		{"quota exhausted after throttling", errors.Join(httpError(400, apiError("Throttling")), fmt.Errorf("token: %w", ratelimit.QuotaExceededError{})), "Throttling"},
		{"quota exhausted", fmt.Errorf("token: %w", ratelimit.QuotaExceededError{}), "RetryQuotaExceeded"},
		{"connection refused", &smithyhttp.RequestSendError{Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, "NetworkError"},
		{"connection closed", &smithyhttp.RequestSendError{Err: io.EOF}, "NetworkError"},
		{"silent connection", &smithyhttp.RequestSendError{Err: &awshttp.ResponseTimeoutError{TimeoutDur: time.Second}}, "Timeout"},
		{"our deadline", &smithy.CanceledError{Err: context.DeadlineExceeded}, "DeadlineExceeded"},
		{"our deadline in a backoff", &aws.RequestCanceledError{Err: context.DeadlineExceeded}, "DeadlineExceeded"},
		{"conditional check", httpError(400, apiError("ConditionalCheckFailedException")), ""},
		{"missing table", httpError(400, apiError("ResourceNotFoundException")), ""},
		{"bad request", httpError(400, apiError("ValidationException")), ""},
		{"access denied", httpError(400, apiError("AccessDeniedException")), ""},
		{"our bug", errors.New("decode item: bad"), ""},
	} {
		code, ok := awsclient.Classify(c.err, store.BusyTransaction)
		if ok != (c.code != "") || code != c.code {
			t.Errorf("%s: Classify = %q, %v; want %q", c.name, code, ok, c.code)
		}
	}
}

// client is a DynamoDB client of endpoint following p, with static
// credentials.
func client(endpoint string, p awsclient.Policy, cfg aws.Config) *dynamodb.Client {
	cfg.Region = "us-east-1"
	cfg.Credentials = credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
	cfg.BaseEndpoint = aws.String(endpoint)
	return store.NewClient(cfg, p)
}

func getItem(c *dynamodb.Client) error { return getItemWithin(context.Background(), c) }

func getItemWithin(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("t"),
		Key:       map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "x"}},
	})
	return err
}

// answering is a DynamoDB endpoint answering the first n calls with an
// error of code (HTTP 400) and the rest with an empty item.
func answering(t *testing.T, code string, n int32) (url string, calls *atomic.Int32) {
	calls = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if calls.Add(1) <= n {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"m"}`, code)
			return
		}
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

var quick = awsclient.Policy{MaxAttempts: 4, MaxBackoff: time.Millisecond, ConnectTimeout: time.Second, ResponseHeaderTimeout: 100 * time.Millisecond}

func TestThrottlingIsRetriedThenReportedUnavailable(t *testing.T) {
	url, calls := answering(t, "ThrottlingException", 1000)
	err := getItem(client(url, quick, aws.Config{}))
	if !errors.Is(err, fault.ErrUnavailable) || fault.Code(err) != "ThrottlingException" {
		t.Fatalf("%v (code %q); want an outage with code ThrottlingException", err, fault.Code(err))
	}
	if calls.Load() != 4 {
		t.Errorf("%d calls; want the policy's 4 attempts", calls.Load())
	}
	var api smithy.APIError // the SDK's error is still there, under the mark
	if !errors.As(err, &api) || api.ErrorCode() != "ThrottlingException" {
		t.Errorf("the API error is not reachable through the mark: %v", err)
	}

	url, calls = answering(t, "ThrottlingException", 2)
	if err := getItem(client(url, quick, aws.Config{})); err != nil || calls.Load() != 3 {
		t.Errorf("throttled twice: %v after %d calls; want success on the third", err, calls.Load())
	}
}

func TestTheProfileWinsOverInheritedRetrySettings(t *testing.T) {
	url, calls := answering(t, "ThrottlingException", 1000)
	p := quick
	p.MaxAttempts = 2
	// As AWS_MAX_ATTEMPTS=10 in the environment would set it.
	if err := getItem(client(url, p, aws.Config{RetryMaxAttempts: 10})); err == nil {
		t.Fatal("no error")
	}
	if calls.Load() != 2 {
		t.Errorf("%d calls; want the policy's 2, not the configuration's 10", calls.Load())
	}
}

func TestARefusalIsNotAnOutageAndIsNotRetried(t *testing.T) {
	url, calls := answering(t, "ConditionalCheckFailedException", 1000)
	err := getItem(client(url, quick, aws.Config{}))
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || fault.IsUnavailable(err) {
		t.Errorf("%v; want a ConditionalCheckFailedException that is not an outage", err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls; a refusal is not retried", calls.Load())
	}
}

// A frozen server accepts connections and never answers: each attempt
// gives up after the policy's ResponseHeaderTimeout, and the call after its
// attempts, instead of hanging.
func TestAFrozenServerFailsEachAttemptAndThenTheCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	conns := make(chan net.Conn, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conns <- c // held open, never read or answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(conns) > 0 {
			(<-conns).Close()
		}
	})
	p := quick
	p.MaxAttempts = 3
	err = getItem(client("http://"+ln.Addr().String(), p, aws.Config{}))
	if !errors.Is(err, fault.ErrUnavailable) || fault.Code(err) != "Timeout" {
		t.Fatalf("%v (code %q); want an outage with code Timeout", err, fault.Code(err))
	}
	if accepted.Load() != 3 {
		t.Errorf("%d connections; want one per attempt, 3", accepted.Load())
	}

	// The caller's deadline first: the code says so.
	p.ResponseHeaderTimeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = getItemWithin(ctx, client("http://"+ln.Addr().String(), p, aws.Config{}))
	if !errors.Is(err, fault.ErrUnavailable) || fault.Code(err) != "DeadlineExceeded" {
		t.Errorf("%v (code %q); want an outage with code DeadlineExceeded", err, fault.Code(err))
	}
}

func TestAClosedPortIsAnOutage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = getItem(client("http://"+addr, quick, aws.Config{}))
	if !errors.Is(err, fault.ErrUnavailable) || fault.Code(err) != "NetworkError" {
		t.Errorf("%v (code %q); want an outage with code NetworkError", err, fault.Code(err))
	}
}

// The attempt's timeout counts from its request: a connection that sat
// idle in the pool for most of it leaves the next request all of it. (The
// SDK's read timeout would cut this answer: its window starts with the
// idle connection's read.)
func TestAnAnswerOnAConnectionLeftIdleIsNotCut(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 2 {
			time.Sleep(300 * time.Millisecond) // slow, but well within the timeout
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	p := quick
	p.MaxAttempts, p.ResponseHeaderTimeout = 1, time.Second
	c := client(srv.URL, p, aws.Config{})
	if err := getItem(c); err != nil {
		t.Fatal(err)
	}
	time.Sleep(900 * time.Millisecond) // the connection waits in the pool
	if err := getItem(c); err != nil {
		t.Errorf("an answer 0.3 s after its request, on a connection idle 0.9 s, with a 1 s timeout: %v", err)
	}
}

// AWS_CA_BUNDLE's roots reach the SDK's HTTP client through
// config.LoadDefaultConfig; the policy's timeouts must keep them.
func TestThePolicyKeepsTheCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(bundle, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseEndpoint = aws.String(srv.URL)
	c := store.NewClient(cfg, awsclient.Requests.DynamoDB)
	if err := getItem(c); err != nil {
		t.Errorf("a server the CA bundle trusts: %v", err)
	}
}
