// Package fal speaks fal's queue API (queue.fal.run): requests submitted
// with a webhook (fal_webhook), their status and result read, their
// cancellation, and webhooks verified with ED25519 against fal's JWKS. It
// is the only code that does.
package fal

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"genjobs/internal/keyset"
	"genjobs/internal/provider"
)

// Client is fal's adapter (provider.Client).
type Client struct {
	HTTP *http.Client
	// JWKS fetches the route's signing keys, and reaches only the
	// jwks_url's host without the guard; nil: HTTP.
	JWKS *http.Client

	mu   sync.Mutex
	keys map[string]*keyset.Set // by JWKS URL
}

// New returns a client whose requests go through hc (nil: a client with a
// 30 s timeout).
func New(hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{HTTP: hc, keys: map[string]*keyset.Set{}}
}

// Statuses of a queued request.
const (
	InQueue    = "IN_QUEUE"
	InProgress = "IN_PROGRESS"
	Completed  = "COMPLETED"
)

// appID is the owner and app of a model id: status, result and cancel
// take it without the endpoint's path.
func appID(model string) string {
	parts := strings.SplitN(model, "/", 3)
	if len(parts) < 2 {
		return model
	}
	return parts[0] + "/" + parts[1]
}

func (c *Client) request(ctx context.Context, method, u string, s provider.Secret, body any) (*http.Request, error) {
	req, err := provider.NewRequest(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Key "+s.Token)
	return req, nil
}

// Submit queues a request with the callback URL as fal_webhook. Its start
// deadline (X-Fal-Request-Start-Timeout) is the job's: a request fal has
// not started by then is dropped, so a request whose answer was lost
// cannot start after its job has ended.
func (c *Client) Submit(ctx context.Context, r *provider.Route, s provider.Secret, sub provider.Submission) (provider.Prediction, error) {
	u := r.BaseURL + "/" + r.Model + "?fal_webhook=" + url.QueryEscape(sub.Webhook)
	req, err := c.request(ctx, http.MethodPost, u, s, sub.Input)
	if err != nil {
		return provider.Prediction{}, err
	}
	if sub.StartWithin > 0 {
		secs := max(int(sub.StartWithin/time.Second), 1)
		req.Header.Set("X-Fal-Request-Start-Timeout", strconv.Itoa(secs))
	}
	b, err := provider.Do(c.HTTP, req)
	if err != nil {
		return provider.Prediction{}, err
	}
	var q struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(b, &q); err != nil || q.RequestID == "" {
		return provider.Prediction{}, fmt.Errorf("fal: the answer to a submission has no request_id")
	}
	return provider.Prediction{ID: q.RequestID, Status: provider.Starting}, nil
}

// Read gets a request's status, and its result once it has completed.
func (c *Client) Read(ctx context.Context, r *provider.Route, s provider.Secret, id string) (provider.Prediction, error) {
	base := r.BaseURL + "/" + appID(r.Model) + "/requests/" + url.PathEscape(id)
	req, err := c.request(ctx, http.MethodGet, base+"/status?logs=1", s, nil)
	if err != nil {
		return provider.Prediction{}, err
	}
	b, err := provider.Do(c.HTTP, req)
	if err != nil {
		return provider.Prediction{}, err
	}
	var st struct {
		Status string `json:"status"`
		Logs   []struct {
			Message string `json:"message"`
		} `json:"logs"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return provider.Prediction{}, fmt.Errorf("fal: decode status: %w", err)
	}
	p := provider.Prediction{ID: id}
	switch st.Status {
	case InQueue:
		p.Status = provider.Starting
		return p, nil
	case InProgress:
		var logs strings.Builder
		for _, l := range st.Logs {
			logs.WriteString(l.Message + "\n")
		}
		p.Status, p.Progress = provider.Processing, provider.Progress(logs.String())
		return p, nil
	case Completed:
	default:
		return provider.Prediction{}, fmt.Errorf("fal: unknown status %q", st.Status)
	}
	if msg := text(st.Error); msg != "" {
		p.Status, p.Error = provider.Failed, msg
		return p, nil
	}
	req, err = c.request(ctx, http.MethodGet, base, s, nil)
	if err != nil {
		return provider.Prediction{}, err
	}
	b, err = provider.Do(c.HTTP, req)
	var pe *provider.Error
	switch {
	case errors.As(err, &pe) && pe.StatusCode >= 400 && pe.StatusCode < 500 && pe.StatusCode != http.StatusTooManyRequests:
		// The result answers the model's own error.
		p.Status, p.Error = provider.Failed, pe.Message
		if pe.StatusCode == http.StatusNotFound {
			p.Error = "The provider no longer holds the request's result."
		}
		return p, nil
	case err != nil:
		return provider.Prediction{}, err
	}
	p.Status, p.Outputs = provider.Succeeded, Files(b)
	return p, nil
}

// Find: fal lists no requests by anything of ours. A request made by a
// submission whose answer was lost is known by its webhook, which names
// the job and that submission's token.
func (c *Client) Find(context.Context, *provider.Route, provider.Secret, string, time.Time) (provider.Prediction, bool, error) {
	return provider.Prediction{}, false, provider.ErrUnlisted
}

// Readable: fal's requests can be read.
func (c *Client) Readable() bool { return true }

// Cancel asks fal to cancel a request. A request that has completed
// (ALREADY_COMPLETED) or that fal does not know is what was asked.
func (c *Client) Cancel(ctx context.Context, r *provider.Route, s provider.Secret, id string) error {
	req, err := c.request(ctx, http.MethodPut, r.BaseURL+"/"+appID(r.Model)+"/requests/"+url.PathEscape(id)+"/cancel", s, nil)
	if err != nil {
		return err
	}
	_, err = provider.Do(c.HTTP, req)
	var pe *provider.Error
	if errors.As(err, &pe) && (pe.StatusCode == http.StatusNotFound || pe.StatusCode == http.StatusBadRequest && strings.Contains(pe.Message, "ALREADY_COMPLETED")) {
		return nil
	}
	return err
}

// webhook is the body of fal's webhook.
type webhook struct {
	RequestID        string          `json:"request_id"`
	GatewayRequestID string          `json:"gateway_request_id"`
	Status           string          `json:"status"` // OK or ERROR
	Payload          json.RawMessage `json:"payload"`
	Error            any             `json:"error"`
	PayloadError     any             `json:"payload_error"`
}

// Parse reads a webhook's body: fal sends one when the request has ended.
func (c *Client) Parse(body []byte) (provider.Prediction, error) {
	var w webhook
	if err := json.Unmarshal(body, &w); err != nil {
		return provider.Prediction{}, fmt.Errorf("fal: decode webhook: %w", err)
	}
	p := provider.Prediction{ID: w.RequestID}
	switch w.Status {
	case "OK":
		p.Status, p.Outputs = provider.Succeeded, Files(w.Payload)
		if len(p.Outputs) == 0 && text(w.PayloadError) != "" {
			p.Status, p.Error = provider.Failed, "The provider's result could not be delivered: "+text(w.PayloadError)
		}
	case "ERROR":
		p.Status, p.Error = provider.Failed, text(w.Error)
		if detail := text(w.Payload); detail != "" && detail != "null" {
			p.Error = strings.TrimSpace(p.Error + ": " + detail)
		}
		if p.Error == "" {
			p.Error = "The provider reported an error."
		}
	default:
		return provider.Prediction{}, fmt.Errorf("fal: the webhook's status %q is neither OK nor ERROR", w.Status)
	}
	return p, nil
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.RawMessage:
		return string(bytes.TrimSpace(x))
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// Files lists the URLs of the file objects in a result, in document
// order: every JSON object with a string "url" (fal's File and Image:
// url, content_type, file_name, ...). A file object's own members are not
// searched further.
func Files(result []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	var out []string
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		if d == '[' {
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			return err
		}
		// An object: read its members; a string "url" makes it a file.
		var fileURL string
		var nested []json.RawMessage
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return err
			}
			if key == "url" {
				var s string
				if json.Unmarshal(v, &s) == nil && isFileURL(s) {
					fileURL = s
					continue
				}
			}
			if t := bytes.TrimSpace(v); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
				nested = append(nested, v)
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		if fileURL != "" {
			out = append(out, fileURL)
			return nil
		}
		for _, v := range nested {
			out = append(out, Files(v)...)
		}
		return nil
	}
	_ = walk() // a malformed tail keeps what was read before it
	return out
}

func isFileURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "data:")
}

// Tolerance is how far a webhook's timestamp may be from now.
const Tolerance = 5 * time.Minute

// Headers of fal's webhooks.
const (
	HeaderRequestID = "X-Fal-Webhook-Request-Id"
	HeaderUserID    = "X-Fal-Webhook-User-Id"
	HeaderTimestamp = "X-Fal-Webhook-Timestamp"
	HeaderSignature = "X-Fal-Webhook-Signature"
)

// Message is what fal signs: the request id, the user id, the timestamp
// and the hex SHA-256 of the body, one per line.
func Message(requestID, userID, timestamp string, body []byte) []byte {
	sum := sha256.Sum256(body)
	return []byte(requestID + "\n" + userID + "\n" + timestamp + "\n" + hex.EncodeToString(sum[:]))
}

// Verify checks a webhook: its timestamp within Tolerance of now, its
// request id the body's, and its hex ED25519 signature by one of the keys
// of the route's JWKS (cached KeysFor, read again when no cached key
// verifies it, at most once per RefetchAfter).
func (c *Client) Verify(ctx context.Context, r *provider.Route, h http.Header, body []byte, _ provider.Secret, now time.Time) error {
	reqID, userID, ts, sigHex := h.Get(HeaderRequestID), h.Get(HeaderUserID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if reqID == "" || userID == "" || ts == "" || sigHex == "" {
		return fmt.Errorf("%w: a fal webhook header is missing", provider.ErrUnverified)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not a number", provider.ErrUnverified, HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(secs, 0)); d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%w: the timestamp is more than 5 minutes from now", provider.ErrUnverified)
	}
	var w struct {
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(body, &w) != nil || w.RequestID != reqID {
		return fmt.Errorf("%w: the body's request_id is not the signed one", provider.ErrUnverified)
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: the signature is not hex ED25519", provider.ErrUnverified)
	}
	msg := Message(reqID, userID, ts, body)
	set := c.keySet(r.JWKSURL)
	keys, err := set.Keys(ctx, now)
	if err != nil {
		return fmt.Errorf("%w: fal's signing keys could not be fetched: %v", provider.ErrUnverified, err)
	}
	if verifies(keys, msg, sig) {
		return nil
	}
	keys, fresh, err := set.Refresh(ctx, now) // fal may have rotated its key
	if err != nil {
		return fmt.Errorf("%w: fal's signing keys could not be fetched: %v", provider.ErrUnverified, err)
	}
	if !fresh || !verifies(keys, msg, sig) {
		return fmt.Errorf("%w: no key of fal's JWKS verifies the signature", provider.ErrUnverified)
	}
	return nil
}

// verifies reports whether one of the set's Ed25519 keys signed msg.
func verifies(keys []crypto.PublicKey, msg, sig []byte) bool {
	for _, k := range keys {
		if pub, ok := k.(ed25519.PublicKey); ok && ed25519.Verify(pub, msg, sig) {
			return true
		}
	}
	return false
}

// Caching of the JWKS: kept a day; a signature no cached key verifies
// reads it again, at most once a minute (a forged signature must not
// make every callback a read).
const (
	KeysFor      = 24 * time.Hour
	RefetchAfter = time.Minute
	maxJWKS      = 64 << 10
)

// keySet is the JWKS at u, read through the JWKS client (nil: HTTP).
func (c *Client) keySet(u string) *keyset.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.keys[u]; ok {
		return s
	}
	hc := c.JWKS
	if hc == nil {
		hc = c.HTTP
	}
	s := keyset.New(keyset.Options{URL: u, HTTP: hc, MaxAge: KeysFor, RefreshAfter: RefetchAfter, MaxBytes: maxJWKS})
	c.keys[u] = s
	return s
}
