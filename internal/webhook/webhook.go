// Package webhook delivers a job's terminal record to the URL its client
// gave (docs/api.md, "Webhooks"): one delivery per job with a stable id, attempts on
// a fixed schedule, each signed afresh. It imports no AWS package: the store
// keeps deliveries, the queue carries the waits between attempts.
package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"genjobs/internal/netguard"
	"genjobs/internal/retryafter"
)

// Schedule is the wait before each retry, Standard Webhooks' schedule: the
// first attempt at once, then these; after the last, the delivery fails.
var Schedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// Timeout bounds one attempt, connection to last byte.
const Timeout = 10 * time.Second

// State is where a delivery stands.
type State string

const (
	Pending   State = "pending"   // an attempt is due at NextAt
	Succeeded State = "succeeded" // a 2xx answered
	Failed    State = "failed"    // every attempt failed, or the receiver answered 410
)

// Attempt is one POST to the receiver.
type Attempt struct {
	Number     int        `dynamodbav:"attempt"`
	At         time.Time  `dynamodbav:"at"`                    // when the attempt started
	EndedAt    time.Time  `dynamodbav:"ended_at"`              // when its answer (or failure) came
	StatusCode int        `dynamodbav:"status_code,omitempty"` // 0: no answer
	Error      string     `dynamodbav:"error,omitempty"`       // empty on success
	NextAt     *time.Time `dynamodbav:"next_attempt_at,omitempty"`
}

// Delivery is a job's webhook.
type Delivery struct {
	JobID       string
	WorkspaceID string
	ID          string // X-Service-Webhook-Id: the same on every attempt
	URL         string // byte-for-byte as the client sent it
	State       State
	Attempts    []Attempt
	NextAt      time.Time // when the next attempt is due (Pending)
	ClaimUntil  time.Time // an attempt is being made until then (zero: none)
	CreatedAt   time.Time
}

// Due is the number of the attempt to make next.
func (d *Delivery) Due() int { return len(d.Attempts) + 1 }

// NewID makes a webhook id: "whk_" and 26 hex digits from crypto/rand.
func NewID() string {
	var b [13]byte
	_, _ = rand.Read(b[:])
	return "whk_" + hex.EncodeToString(b[:])
}

// Result is what one attempt got.
type Result struct {
	StatusCode int           // 0 when nothing answered
	RetryAfter time.Duration // the receiver's Retry-After, if any
	Err        string        // why it failed, in a few words; empty on 2xx
	// Refused: the network guard refused the destination. It is never
	// contacted, so no retry: the delivery fails at once.
	Refused bool
}

// Next decides what follows attempt n (1-based) with result r at now: a
// 2xx succeeds; 410, a refused destination and the last attempt fail;
// otherwise the next
// attempt is due after schedule[n-1], or later when Retry-After asks for
// it, but never beyond the schedule's longest wait.
func Next(n int, r Result, now time.Time, schedule []time.Duration) (State, time.Time) {
	switch {
	case r.StatusCode >= 200 && r.StatusCode < 300:
		return Succeeded, time.Time{}
	case r.StatusCode == http.StatusGone, r.Refused, n > len(schedule):
		return Failed, time.Time{}
	}
	wait := schedule[n-1]
	if r.RetryAfter > wait {
		wait = min(r.RetryAfter, longest(schedule))
	}
	return Pending, now.Add(wait)
}

func longest(schedule []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range schedule {
		m = max(m, d)
	}
	return m
}

// ParseSchedule reads a comma-separated list of Go durations ("1s,2s,4s"):
// a compressed schedule for tests and the local stack.
func ParseSchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range bytes.Split([]byte(s), []byte(",")) {
		d, err := time.ParseDuration(string(bytes.TrimSpace(part)))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a list of positive durations like 5s,5m,30m", s)
		}
		out = append(out, d)
	}
	return out, nil
}

// Claims are what the signature of one attempt says (docs/api.md, "Webhooks").
type Claims struct {
	Issuer   string    // the API's base URL
	Audience string    // the webhook URL, as sent
	Subject  string    // the job id
	ID       string    // the webhook id
	IssuedAt time.Time // this attempt's timestamp
	Body     []byte    // the bytes sent
}

// Signer signs one attempt: a compact JWS for X-Service-Webhook-Signature.
type Signer interface {
	WebhookToken(ctx context.Context, c Claims) (string, error)
}

// Sender POSTs attempts. Client must refuse redirects and go through the
// network guard (NewClient).
type Sender struct {
	Client *http.Client
	Signer Signer
}

// NewClient is the HTTP client of deliveries: transport (the network
// guard's), a 10 s timeout, redirects never followed.
func NewClient(transport http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: transport,
		Timeout:   Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// errSigning marks a failure of ours, not the receiver's.
var errSigning = errors.New("webhook: signing failed")

// Send makes one attempt of d with body at now. A signing failure is an
// error (retry the message); anything the receiver does is a Result.
func (s *Sender) Send(ctx context.Context, d *Delivery, issuer string, body []byte, now time.Time) (Result, error) {
	at := now.Truncate(time.Second)
	token, err := s.Signer.WebhookToken(ctx, Claims{
		Issuer: issuer, Audience: d.URL, Subject: d.JobID, ID: d.ID, IssuedAt: at, Body: body,
	})
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", errSigning, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return Result{Err: "the URL cannot be requested"}, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "genjobs-webhooks/1")
	req.Header.Set("X-Service-Webhook-Id", d.ID)
	req.Header.Set("X-Service-Webhook-Timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("X-Service-Webhook-Signature", token)
	resp, err := s.Client.Do(req)
	if err != nil {
		return Result{Err: describe(err), Refused: errors.Is(err, netguard.ErrBlocked)}, nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	r := Result{StatusCode: resp.StatusCode, RetryAfter: retryafter.Parse(resp.Header.Get("Retry-After"), now, longest(Schedule))}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r.Err = fmt.Sprintf("the receiver answered %d", resp.StatusCode)
	}
	return r, nil
}

// describe words a transport failure for the delivery log, without
// addresses the client did not write.
func describe(err error) string {
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		return "the destination address is not allowed"
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return "no answer within 10 s"
	default:
		return "the connection failed"
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
