// Package cog speaks Cog's HTTP protocol (as the replicate/cog repository documents it) to a
// model server of the operator's: idempotent asynchronous predictions
// (PUT /predictions/{id} with Prefer: respond-async), their cancellation,
// and webhooks with an optional bearer token. It is the only code that does.
package cog

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"genjobs/internal/provider"
)

// Client is Cog's adapter (provider.Client).
type Client struct {
	HTTP *http.Client
}

// New returns a client whose requests go through hc (nil: a client with a
// 30 s timeout).
func New(hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{HTTP: hc}
}

// Events are the webhook events asked for: Cog cannot be read, so its logs
// (at most two a second) carry the progress.
var Events = []string{"start", "logs", "completed"}

type prediction struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  any             `json:"error"`
	Logs   any             `json:"logs"` // a string; some servers send a list
}

func (p *prediction) read(id string) provider.Prediction {
	out := provider.Prediction{ID: p.ID, Status: provider.Status(p.Status)}
	if out.ID == "" {
		out.ID = id
	}
	if out.Status == "" {
		out.Status = provider.Starting
	}
	switch l := p.Logs.(type) {
	case string:
		out.Progress = provider.Progress(l)
	case []any:
		var b strings.Builder
		for _, x := range l {
			fmt.Fprint(&b, x)
		}
		out.Progress = provider.Progress(b.String())
	}
	if p.Error != nil {
		if s, ok := p.Error.(string); ok {
			out.Error = s
		} else {
			b, _ := json.Marshal(p.Error)
			out.Error = string(b)
		}
	}
	if out.Status == provider.Succeeded {
		// One read of the output for both lists: its data: URIs may be
		// megabytes.
		all := provider.Strings(p.Output, func(string) bool { return true })
		out.Outputs = slices.DeleteFunc(slices.Clone(all), func(s string) bool { return !provider.IsOutput(s) })
		out.Paths = slices.DeleteFunc(all, func(s string) bool { return !isPath(s) })
	}
	return out
}

// Paths lists the outputs given as file paths on the server's own disk
// (an absolute path, or a file: URL), as Cog's Python server reports a
// Path output when it runs without --upload-url.
func Paths(output json.RawMessage) []string { return provider.Strings(output, isPath) }

func isPath(s string) bool { return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "file:") }

func (c *Client) request(ctx context.Context, method, u string, s provider.Secret, body any) (*http.Request, error) {
	req, err := provider.NewRequest(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if s.Token != "" { // a server behind an authenticating proxy
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	return req, nil
}

// Submit starts a prediction with the given id, or answers the running one
// of that id.
func (c *Client) Submit(ctx context.Context, r *provider.Route, s provider.Secret, sub provider.Submission) (provider.Prediction, error) {
	body := map[string]any{"id": sub.ID, "input": sub.Input, "webhook": sub.Webhook, "webhook_events_filter": Events}
	req, err := c.request(ctx, http.MethodPut, r.BaseURL+"/predictions/"+url.PathEscape(sub.ID), s, body)
	if err != nil {
		return provider.Prediction{}, err
	}
	req.Header.Set("Prefer", "respond-async")
	b, err := provider.Do(c.HTTP, req)
	if err != nil {
		return provider.Prediction{}, err
	}
	var p prediction
	if len(b) > 0 {
		if err := json.Unmarshal(b, &p); err != nil {
			return provider.Prediction{}, fmt.Errorf("cog: decode prediction: %w", err)
		}
	}
	return p.read(sub.ID), nil
}

// Read: Cog has no read of a prediction.
func (c *Client) Read(context.Context, *provider.Route, provider.Secret, string) (provider.Prediction, error) {
	return provider.Prediction{}, provider.ErrUnreadable
}

// Find: the id is the client's, so there is nothing to find: a
// resubmission with it is idempotent while the prediction runs.
func (c *Client) Find(context.Context, *provider.Route, provider.Secret, string, time.Time) (provider.Prediction, bool, error) {
	return provider.Prediction{}, false, nil
}

// Readable: Cog's predictions cannot be read.
func (c *Client) Readable() bool { return false }

// Cancel asks the server to cancel a prediction. 404 (the server knows no
// such prediction: it ended, or never started) is what was asked.
func (c *Client) Cancel(ctx context.Context, r *provider.Route, s provider.Secret, id string) error {
	req, err := c.request(ctx, http.MethodPost, r.BaseURL+"/predictions/"+url.PathEscape(id)+"/cancel", s, nil)
	if err != nil {
		return err
	}
	_, err = provider.Do(c.HTTP, req)
	if pe, ok := err.(*provider.Error); ok && pe.StatusCode == http.StatusNotFound {
		return nil
	}
	return err
}

// Parse reads a webhook's body: the prediction object.
func (c *Client) Parse(body []byte) (provider.Prediction, error) {
	var p prediction
	if err := json.Unmarshal(body, &p); err != nil {
		return provider.Prediction{}, fmt.Errorf("cog: decode webhook: %w", err)
	}
	if p.Status == "" {
		return provider.Prediction{}, fmt.Errorf("cog: the webhook has no status")
	}
	return p.read(""), nil
}

// Verify checks the webhook's bearer token when the secret has one (Cog's
// WEBHOOK_AUTH_TOKEN); without one the unguessable URL is the only proof.
func (c *Client) Verify(_ context.Context, _ *provider.Route, h http.Header, _ []byte, s provider.Secret, _ time.Time) error {
	if s.WebhookToken == "" {
		return nil
	}
	got, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.WebhookToken)) != 1 {
		return fmt.Errorf("%w: the bearer token does not match", provider.ErrUnverified)
	}
	return nil
}
