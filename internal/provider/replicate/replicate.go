// Package replicate speaks Replicate's HTTP API: predictions created with a
// webhook, read, listed and cancelled, and webhooks verified as Standard
// Webhooks. It is the only code that does.
package replicate

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"genjobs/internal/provider"
)

// Client is Replicate's adapter (provider.Client).
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

// Events are the webhook events asked for: the start (scheduled ->
// processing) and the end; progress comes from polling.
var Events = []string{"start", "completed"}

// prediction is Replicate's prediction object, the fields read here.
type prediction struct {
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	Output    json.RawMessage `json:"output"`
	Error     any             `json:"error"`
	Logs      string          `json:"logs"`
	Webhook   string          `json:"webhook"`
	CreatedAt string          `json:"created_at"`
}

func (p *prediction) read() (provider.Prediction, error) {
	if p.ID == "" || p.Status == "" {
		return provider.Prediction{}, fmt.Errorf("replicate: the answer is not a prediction")
	}
	out := provider.Prediction{ID: p.ID, Status: provider.Status(p.Status), Progress: provider.Progress(p.Logs)}
	switch e := p.Error.(type) {
	case nil:
	case string:
		out.Error = e
	default:
		b, _ := json.Marshal(e)
		out.Error = string(b)
	}
	if out.Status == provider.Succeeded {
		out.Outputs = provider.Outputs(p.Output)
	}
	return out, nil
}

func (c *Client) do(ctx context.Context, method, u string, s provider.Secret, body any) ([]byte, error) {
	req, err := provider.NewRequest(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	return provider.Do(c.HTTP, req)
}

func (c *Client) prediction(ctx context.Context, method, u string, s provider.Secret, body any) (provider.Prediction, error) {
	b, err := c.do(ctx, method, u, s, body)
	if err != nil {
		return provider.Prediction{}, err
	}
	var p prediction
	if err := json.Unmarshal(b, &p); err != nil {
		return provider.Prediction{}, fmt.Errorf("replicate: decode prediction: %w", err)
	}
	return p.read()
}

// Submit creates a prediction: on the model's endpoint for a route with a
// model, with "version" for a route with a version.
func (c *Client) Submit(ctx context.Context, r *provider.Route, s provider.Secret, sub provider.Submission) (provider.Prediction, error) {
	body := map[string]any{"input": sub.Input, "webhook": sub.Webhook, "webhook_events_filter": Events}
	u := r.BaseURL + "/v1/predictions"
	if r.Model != "" {
		u = r.BaseURL + "/v1/models/" + r.Model + "/predictions"
	} else {
		body["version"] = r.Version
	}
	return c.prediction(ctx, http.MethodPost, u, s, body)
}

// Read gets a prediction.
func (c *Client) Read(ctx context.Context, r *provider.Route, s provider.Secret, id string) (provider.Prediction, error) {
	return c.prediction(ctx, http.MethodGet, r.BaseURL+"/v1/predictions/"+url.PathEscape(id), s, nil)
}

// Cancel asks Replicate to cancel a prediction; one that has ended is
// answered as it stands, which is what was asked.
func (c *Client) Cancel(ctx context.Context, r *provider.Route, s provider.Secret, id string) error {
	_, err := c.do(ctx, http.MethodPost, r.BaseURL+"/v1/predictions/"+url.PathEscape(id)+"/cancel", s, nil)
	return err
}

// findPages bounds the list pages Find reads (100 predictions each).
const findPages = 5

// Find lists the account's predictions, newest first, back to since, and
// returns the one whose webhook names the job: the callback URL carries
// the job id. A list item without its webhook is read whole. A next page
// on another server than the route's is an error: its URL would get the
// route's token.
func (c *Client) Find(ctx context.Context, r *provider.Route, s provider.Secret, jobID string, since time.Time) (provider.Prediction, bool, error) {
	next := r.BaseURL + "/v1/predictions"
	for page := 0; page < findPages && next != ""; page++ {
		b, err := c.do(ctx, http.MethodGet, next, s, nil)
		if err != nil {
			return provider.Prediction{}, false, err
		}
		var list struct {
			Next    *string      `json:"next"`
			Results []prediction `json:"results"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			return provider.Prediction{}, false, fmt.Errorf("replicate: decode prediction list: %w", err)
		}
		for _, p := range list.Results {
			created, err := time.Parse(time.RFC3339Nano, p.CreatedAt)
			if err == nil && created.Before(since.Add(-time.Minute)) {
				return provider.Prediction{}, false, nil // older than the first submission
			}
			if p.Webhook == "" {
				full, err := c.do(ctx, http.MethodGet, r.BaseURL+"/v1/predictions/"+url.PathEscape(p.ID), s, nil)
				if err != nil {
					return provider.Prediction{}, false, err
				}
				if err := json.Unmarshal(full, &p); err != nil {
					return provider.Prediction{}, false, fmt.Errorf("replicate: decode prediction: %w", err)
				}
			}
			if strings.Contains(p.Webhook, "/"+jobID+"/") {
				pred, err := p.read()
				return pred, err == nil, err
			}
		}
		next = ""
		if list.Next != nil && *list.Next != "" {
			// The next page's URL is the answer's, and gets the token: only
			// on the route's own server (not a redirect, which drops it).
			u, err := url.Parse(*list.Next)
			if err != nil || provider.HostPort(u) != r.HostPort() {
				return provider.Prediction{}, false, fmt.Errorf("replicate: the prediction list's next page is not on the route's server (%s); not followed", r.HostPort())
			}
			next = u.String()
		}
	}
	return provider.Prediction{}, false, nil
}

// Readable: Replicate's predictions can be read.
func (c *Client) Readable() bool { return true }

// Parse reads a webhook's body: the prediction object.
func (c *Client) Parse(body []byte) (provider.Prediction, error) {
	var p prediction
	if err := json.Unmarshal(body, &p); err != nil {
		return provider.Prediction{}, fmt.Errorf("replicate: decode webhook: %w", err)
	}
	return p.read()
}

// Tolerance is how far a webhook's timestamp may be from now.
const Tolerance = 5 * time.Minute

// Verify checks a webhook as Standard Webhooks: the HMAC-SHA256 of
// "{webhook-id}.{webhook-timestamp}.{body}" keyed by the base64 secret
// after "whsec_", against any of the "v1,<base64>" signatures of
// webhook-signature, with a timestamp within Tolerance of now.
func (c *Client) Verify(_ context.Context, _ *provider.Route, h http.Header, body []byte, s provider.Secret, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("%w: webhook-id, webhook-timestamp or webhook-signature is missing", provider.ErrUnverified)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s.WebhookSecret, "whsec_"))
	if err != nil || len(key) == 0 {
		return fmt.Errorf("%w: the secret has no usable webhook_secret", provider.ErrUnverified)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp is not a number", provider.ErrUnverified)
	}
	if d := now.Sub(time.Unix(secs, 0)); d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%w: webhook-timestamp is more than 5 minutes from now", provider.ErrUnverified)
	}
	want := Sign(key, id, ts, body)
	for _, sig := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(sig, ",")
		if ok && v == "v1" && subtle.ConstantTimeCompare([]byte(b64), []byte(want)) == 1 {
			return nil
		}
	}
	return fmt.Errorf("%w: no signature matches", provider.ErrUnverified)
}

// Sign is the base64 Standard Webhooks signature of a message.
func Sign(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
