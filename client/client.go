// Package client is the Go client of the generation job API: typed requests
// for the seven generation endpoints, jobs (get, list, cancel, wait,
// download), assets, usage, styles, and a verifier for the webhooks the
// service sends.
//
// A call is retried only when a retry cannot do twice what the first
// attempt may have done: reads (GET), cancellations (DELETE; a retry that
// meets 409 reads the job and reports success when the job is cancelled),
// uploads to a presigned URL (PUT), and job creations, which carry an
// Idempotency-Key (generated unless given with WithIdempotencyKey) reused on
// each retry, so that a retry answers the job the first attempt created.
// Those are retried on connection errors, 429 and 503; an asset's creation
// (POST /assets) only on 429, which the API answers before doing anything.
// The backoff has jitter, honours Retry-After and stops with the context.
//
// Errors are values. Every error the package returns is one of:
//   - an *APIError: the API's (or storage's) refusal (use errors.As);
//   - a *JobFailedError or *JobCancelledError, carrying the job record;
//   - the context's error, when it ended the call;
//   - an error matching one of the package's sentinels with errors.Is:
//     ErrConfig, ErrRequest, ErrUnreachable, ErrUnexpectedAnswer,
//     ErrNoResult, ErrDownload, ErrNotAnImage, ErrTooLarge, and for webhooks
//     ErrWebhookUnsigned ... ErrWebhookKeys;
//   - an error of the caller's own io.Reader or io.Writer, wrapped.
package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables NewClient reads when no option gives the value.
const (
	TokenEnv  = "GENJOBS_TOKEN"
	APIURLEnv = "GENJOBS_API_URL"
)

// DefaultAPIURL is the local stack's address, used when neither
// WithBaseURL nor GENJOBS_API_URL gives one.
const DefaultAPIURL = "http://127.0.0.1:3000"

// Defaults of the options.
const (
	DefaultMaxRetries     = 3
	DefaultRequestTimeout = 60 * time.Second
)

// Client calls the API. Build it once with NewClient and share it: it is
// safe for concurrent use.
type Client struct {
	Jobs   *JobsService
	Assets *AssetsService
	Styles *StylesService

	token      string
	baseURL    string
	http       *http.Client
	maxRetries int
	timeout    time.Duration
	sleep      func(context.Context, time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the API token (default: GENJOBS_TOKEN).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithBaseURL sets the API's base address, such as https://api.example.com
// (default: GENJOBS_API_URL, else DefaultAPIURL).
func WithBaseURL(u string) Option { return func(c *Client) { c.baseURL = strings.TrimRight(u, "/") } }

// WithHTTPClient sets the HTTP client every request goes through (default:
// a client of its own on http.DefaultTransport).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithMaxRetries sets how many times a request is retried after a
// connection error, a 429 or a 503 (default DefaultMaxRetries; 0 never
// retries).
func WithMaxRetries(n int) Option { return func(c *Client) { c.maxRetries = max(n, 0) } }

// WithRequestTimeout bounds each attempt of an API call, its answer's body
// included (default DefaultRequestTimeout; 0 for none). Downloads and the
// upload of a large asset to storage are bounded by their context only.
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// NewClient returns a client configured by opts, then by the environment.
// It fails when no token is given by either.
func NewClient(opts ...Option) (*Client, error) {
	c := &Client{maxRetries: DefaultMaxRetries, timeout: DefaultRequestTimeout, sleep: sleepContext}
	c.token, c.baseURL = os.Getenv(TokenEnv), strings.TrimRight(os.Getenv(APIURLEnv), "/")
	for _, o := range opts {
		o(c)
	}
	if c.baseURL == "" {
		c.baseURL = DefaultAPIURL
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.token == "" {
		return nil, fmt.Errorf("%w: no API token: set %s or use WithToken", ErrConfig, TokenEnv)
	}
	if u, err := url.Parse(c.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: the API URL %q is not an absolute http(s) URL", ErrConfig, c.baseURL)
	}
	c.Jobs, c.Assets, c.Styles = &JobsService{c}, &AssetsService{c}, &StylesService{c}
	return c, nil
}

// BaseURL is the API's base address the client calls, without a trailing
// slash. It is also the iss of the service's webhook signatures.
func (c *Client) BaseURL() string { return c.baseURL }

// Sentinels of the errors that are not an answer of the API (see the
// package documentation).
var (
	// ErrConfig: NewClient's options and environment do not make a client
	// (no token, or an API URL that is not an absolute http(s) URL).
	ErrConfig = errors.New("client: bad configuration")
	// ErrRequest: the request could not be made at all (a body that does
	// not encode as JSON, a URL that does not parse).
	ErrRequest = errors.New("client: the request cannot be made")
	// ErrUnreachable: no answer came (a refused or reset connection, an
	// attempt's timeout), after the retries the request allows.
	ErrUnreachable = errors.New("client: no answer")
	// ErrUnexpectedAnswer: a success whose body is not what the API
	// documents.
	ErrUnexpectedAnswer = errors.New("client: an answer that is not the expected JSON")
	// ErrNoResult: the job has no result file of the number asked for.
	ErrNoResult = errors.New("client: no such result file")
	// ErrDownload: storage refused a result file's download with a status
	// other than the 403 of an expired URL (which Download reads again).
	ErrDownload = errors.New("client: download refused")
)

// APIError is the API's refusal of a request: a 4xx, or a 5xx that remained
// after the retries.
type APIError struct {
	StatusCode int
	// Message is the API's own words (the body's error field, or the
	// gateway's message).
	Message string
	// Detail is the body's message field where the API gives one (402).
	Detail string
	// RequestID names the request in the service's logs (apigw-requestid).
	RequestID string
	// RetryAfter is the wait the API asked for, or 0.
	RetryAfter time.Duration
	// Body is the answer's body as received.
	Body []byte

	// retried: an earlier attempt of the request got no answer, or one
	// that asked for the retry.
	retried bool
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "genjobs API: %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Detail != "" {
		b.WriteString(" (" + e.Detail + ")")
	}
	if e.RequestID != "" {
		b.WriteString(" [request " + e.RequestID + "]")
	}
	return b.String()
}

// request is one API call; body, when not nil, is sent again as is on each
// attempt.
type request struct {
	method, path string
	query        url.Values
	header       http.Header
	body         []byte
	contentType  string
	// rawURL replaces base URL, path and query (a presigned URL), and
	// leaves out the token.
	rawURL string
	// retryConflict retries a 409 too: a creation whose Idempotency-Key's
	// first request is still being processed.
	retryConflict bool
	// untimed leaves the attempt to the context alone: an upload of up to
	// 50 MiB may take longer than an API call's timeout.
	untimed bool
}

// response is an answer read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// maxAnswer bounds the body of an API answer read into memory (a list page
// of 1000 jobs is well under it).
const maxAnswer = 32 << 20

// do sends r, retrying as the package documentation says, and returns a 2xx
// answer or an error (an *APIError for any other status).
func (c *Client) do(ctx context.Context, r request) (*response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.attempt(ctx, r)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		wait, retry := c.shouldRetry(r, resp, err, attempt)
		if !retry {
			var be buildError
			switch {
			case errors.As(err, &be):
				return nil, fmt.Errorf("%w: %w", ErrRequest, be.error)
			case err != nil:
				return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
			case resp.status/100 != 2:
				e := apiError(resp)
				e.retried = attempt > 0
				return nil, e
			}
			return resp, nil
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// attempt sends r once and reads the whole answer.
func (c *Client) attempt(ctx context.Context, r request) (*response, error) {
	if c.timeout > 0 && !r.untimed {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	u := r.rawURL
	if u == "" {
		u = c.baseURL + r.path
		if len(r.query) > 0 {
			u += "?" + r.query.Encode()
		}
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body) // a new reader each attempt: the body rewound
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, buildError{err}
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.rawURL == "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Accept", "application/json")
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// Backoff without Retry-After: 0.5 s, 1 s, 2 s ... up to 8 s, each with up
// to a quarter taken off at random so that clients spread out.
const (
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = 8 * time.Second
	// maxRetryAfter is the longest Retry-After the client waits for; a
	// longer one ends the retries with the error.
	maxRetryAfter = 60 * time.Second
)

// repeatable reports whether sending r twice does no more than sending it
// once: a read, a cancellation, a PUT of the same bytes, or a request that
// carries an Idempotency-Key.
func (r request) repeatable() bool {
	switch r.method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return true
	}
	return r.header.Get("Idempotency-Key") != ""
}

// shouldRetry says whether the outcome of attempt (counted from 0) is
// retried, and after how long. A connection error or a 503 may come after
// the API acted on the request, so only a repeatable request is retried on
// them; a 429 comes before it acts.
func (c *Client) shouldRetry(r request, resp *response, err error, attempt int) (time.Duration, bool) {
	if attempt >= c.maxRetries {
		return 0, false
	}
	if err != nil {
		// A request that could not be built is not worth another try;
		// anything else went wrong on the way (a refused or reset
		// connection, an attempt's timeout).
		var be buildError
		if errors.As(err, &be) || !r.repeatable() {
			return 0, false
		}
		return backoff(attempt), true
	}
	switch {
	case resp.status == http.StatusTooManyRequests:
	case resp.status == http.StatusServiceUnavailable && r.repeatable():
	case resp.status == http.StatusConflict && r.retryConflict:
	default:
		return 0, false
	}
	if d, ok := retryAfter(resp.header.Get("Retry-After"), time.Now()); ok {
		if d > maxRetryAfter {
			return 0, false
		}
		return d, true
	}
	return backoff(attempt), true
}

// buildError is a request that could not be made at all.
type buildError struct{ error }

func (e buildError) Unwrap() error { return e.error }

func backoff(attempt int) time.Duration {
	d := initialBackoff << min(attempt, 10)
	d = min(d, maxBackoff)
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// retryAfter reads a Retry-After header: seconds or an HTTP date. The
// service reads the header with internal/retryafter; this package keeps its
// own reader because it is a module of its own (genjobs/client) that users
// import, built on the standard library alone: sharing the service's
// reader would make every user's build require the service's module. It
// also answers differently: whether the header was there at all (ok), and
// a date that has passed as "retry now".
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); s >= 0 && (err == nil || errors.Is(err, strconv.ErrRange)) {
		// A number of seconds past what a Duration holds (ParseInt gives
		// its largest int64 with ErrRange) is a wait too long, never a
		// product that wraps around to "retry now".
		if s > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func apiError(resp *response) *APIError {
	e := &APIError{StatusCode: resp.status, RequestID: resp.header.Get("Apigw-Requestid"), Body: resp.body}
	e.RetryAfter, _ = retryAfter(resp.header.Get("Retry-After"), time.Now())
	var body struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(resp.body, &body) == nil {
		e.Message, e.Detail = body.Error, body.Message
		if e.Message == "" { // API Gateway's own answers: {"message": ...}
			e.Message, e.Detail = body.Message, ""
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(resp.body[:min(len(resp.body), 200)]))
	}
	return e
}

// getJSON calls GET path and decodes the answer into out.
func (c *Client) getJSON(ctx context.Context, path string, query url.Values, out any) error {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path, query: query})
	if err != nil {
		return err
	}
	return decode(resp, out)
}

func decode(resp *response, out any) error {
	if err := json.Unmarshal(resp.body, out); err != nil {
		return fmt.Errorf("%w (%d): %w", ErrUnexpectedAnswer, resp.status, err)
	}
	return nil
}

// newIdempotencyKey is a random UUID (version 4).
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
