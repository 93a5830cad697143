package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

//go:generate go run ./internal/reqgen -o requests_gen.go

// GenerateRequest is the body of one generation endpoint: the typed
// requests of this package (StandardEnhanceRequest ... ModelG31RapidRequest),
// generated from the API's request schemas, or RawRequest.
type GenerateRequest interface {
	// Path is the endpoint's route, /generate/{kind}/{vendor}/{model}.
	Path() string
}

// RawRequest is a generation request given as a route and a JSON body, for
// an endpoint or a field this package does not know yet.
type RawRequest struct {
	Route string          // /generate/{kind}/{vendor}/{model}, or {kind}/{vendor}/{model}
	Body  json.RawMessage // a JSON object; empty means {}
}

// Path is the endpoint's route.
func (r RawRequest) Path() string {
	if strings.HasPrefix(r.Route, "/generate/") {
		return r.Route
	}
	return "/generate/" + strings.TrimPrefix(r.Route, "/")
}

// MarshalJSON sends Body as it is.
func (r RawRequest) MarshalJSON() ([]byte, error) {
	if len(r.Body) == 0 {
		return []byte("{}"), nil
	}
	return r.Body, nil
}

// GenerateOption adds to one creation request.
type GenerateOption func(*generateSettings)

type generateSettings struct {
	idempotencyKey string
	webhookURL     string
}

// WithIdempotencyKey sets the creation's Idempotency-Key (1 to 255
// printable ASCII characters). Without it a random key is generated; either
// way every retry of the request carries the same key.
func WithIdempotencyKey(key string) GenerateOption {
	return func(s *generateSettings) { s.idempotencyKey = key }
}

// WithWebhookURL asks the service to POST the job's record to u when the
// job ends (X-Webhook-URL). The URL is the signature's audience: a receiver
// verifies it byte for byte.
func WithWebhookURL(u string) GenerateOption {
	return func(s *generateSettings) { s.webhookURL = u }
}

// Ptr returns a pointer to v, for the optional fields of the requests:
//
//	client.ModelE4Request{Prompt: "a red bicycle", Width: 1024, Height: 768, Seed: client.Ptr[int64](7)}
func Ptr[T any](v T) *T { return &v }

// Generate creates a job and returns its record in a pending state
// (queued or backlogged). Retries send the same Idempotency-Key, so they
// answer the same job.
func (c *Client) Generate(ctx context.Context, req GenerateRequest, opts ...GenerateOption) (*Job, error) {
	var s generateSettings
	for _, o := range opts {
		o(&s)
	}
	if s.idempotencyKey == "" {
		s.idempotencyKey = newIdempotencyKey()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: encode the %s request: %w", ErrRequest, req.Path(), err)
	}
	h := http.Header{}
	h.Set("Idempotency-Key", s.idempotencyKey)
	if s.webhookURL != "" {
		h.Set("X-Webhook-URL", s.webhookURL)
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: req.Path(), header: h, body: body,
		contentType: "application/json", retryConflict: true})
	if err != nil {
		return nil, err
	}
	var j Job
	if err := decode(resp, &j); err != nil {
		return nil, err
	}
	j.replayed = resp.header.Get("Idempotent-Replayed") == "true"
	return &j, nil
}

// Run creates a job and waits until it ends: the completed job, or a
// *JobFailedError or *JobCancelledError.
func (c *Client) Run(ctx context.Context, req GenerateRequest, wait *WaitOptions, opts ...GenerateOption) (*Job, error) {
	j, err := c.Generate(ctx, req, opts...)
	if err != nil {
		return nil, err
	}
	return c.Jobs.Wait(ctx, j.ID, wait)
}

// Endpoint describes one generation endpoint (see Endpoints).
type Endpoint struct {
	Path    string // /generate/{kind}/{vendor}/{model}
	Summary string
	Fields  []Field
}

// Field is one field of a generation request.
type Field struct {
	Name     string
	Type     string // JSON Schema type: string, integer, number, boolean, array
	Required bool
}

// LookupEndpoint finds an endpoint by its path, with or without the
// /generate/ prefix.
func LookupEndpoint(path string) (Endpoint, bool) {
	p := RawRequest{Route: path}.Path()
	for _, e := range Endpoints {
		if e.Path == p {
			return e, true
		}
	}
	return Endpoint{}, false
}
