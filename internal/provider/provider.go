// Package provider runs the jobs of routed endpoints on a model provider
// (Replicate's hosted API, or a model server speaking Cog's HTTP protocol)
// instead of the reference engines: the routes, the provider interface its
// adapters (packages replicate and cog) implement, and the short,
// message-driven steps that submit a prediction, read it, take its
// callbacks, copy its outputs and cancel it. No step waits for the model:
// each does its few requests and hands the rest to a delayed message. It
// imports no AWS package.
package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"genjobs/internal/retryafter"
)

// Status is a prediction's status, in Replicate's and Cog's words.
type Status string

// Prediction statuses.
const (
	Starting   Status = "starting"
	Processing Status = "processing"
	Succeeded  Status = "succeeded"
	Failed     Status = "failed"
	Canceled   Status = "canceled"
	Aborted    Status = "aborted" // Replicate: ended before it started
)

// Ended reports whether the prediction can change no more.
func (s Status) Ended() bool {
	return s == Succeeded || s == Failed || s == Canceled || s == Aborted
}

// Prediction is a provider's prediction as the service reads it.
type Prediction struct {
	ID       string
	Status   Status
	Progress *float64 // 0..1 when the provider's logs report a percentage
	Outputs  []string // URLs and data: URIs, in order
	// Paths are outputs given as file paths on the provider's own disk
	// (a Cog server without an upload store): nothing can read them.
	Paths []string
	Error string // the provider's reason when it failed
}

// Secret is a provider's credentials: the API token, the Standard Webhooks
// secret (whsec_...) and the bearer token of Cog's webhooks. Each is
// optional; none is ever logged.
type Secret struct {
	Token         string `json:"token"`
	WebhookSecret string `json:"webhook_secret"`
	WebhookToken  string `json:"webhook_token"`
}

// Secrets reads named secrets (internal/secrets).
type Secrets interface {
	Get(ctx context.Context, name string) (Secret, error)
}

// Submission is one creation of a prediction.
type Submission struct {
	JobID string
	// ID is the prediction's id where the client chooses it (Cog); the
	// same id makes a resubmission idempotent while the prediction runs.
	ID      string
	Input   map[string]any
	Webhook string // the callback URL of this service
	// StartWithin is the time left to the job's deadline: a provider that
	// takes a start deadline (fal) drops a request not started by then.
	StartWithin time.Duration
}

// Client speaks one provider's protocol. Build one per provider, once.
type Client interface {
	Submit(ctx context.Context, r *Route, s Secret, sub Submission) (Prediction, error)
	// Read returns the prediction as it stands: ErrUnreadable where the
	// protocol has no read (Cog).
	Read(ctx context.Context, r *Route, s Secret, id string) (Prediction, error)
	// Find looks for the prediction of job jobID created since since, after
	// a submission whose answer was lost: found false when there is none.
	// ErrUnlisted where the protocol cannot look (fal): such a prediction
	// makes itself known by its callback.
	Find(ctx context.Context, r *Route, s Secret, jobID string, since time.Time) (p Prediction, found bool, err error)
	Cancel(ctx context.Context, r *Route, s Secret, id string) error
	// Verify checks a callback's proof of origin: nil when it holds.
	Verify(ctx context.Context, r *Route, h http.Header, body []byte, s Secret, now time.Time) error
	// Parse reads a callback's body.
	Parse(body []byte) (Prediction, error)
	// Readable reports whether Read works: a protocol that cannot be read
	// is checked by submitting again with the same id.
	Readable() bool
}

// Errors of the adapters.
var (
	// ErrUnreadable: the protocol cannot read a prediction.
	ErrUnreadable = errors.New("provider: predictions cannot be read")
	// ErrUnverified: a callback failed verification.
	ErrUnverified = errors.New("provider: callback not verified")
	// ErrUnlisted: the protocol cannot list predictions; one made by a
	// submission whose answer was lost is known by its callback only.
	ErrUnlisted = errors.New("provider: predictions cannot be listed")
)

// Error is a provider's answer other than success.
type Error struct {
	StatusCode int    // 0 for a connection error
	Message    string // the provider's own words, trimmed
	RetryAfter string // the Retry-After header, as the provider sent it
	Err        error  // the connection error, if any
}

func (e *Error) Error() string {
	if e.StatusCode == 0 {
		return "provider unreachable: " + e.Err.Error()
	}
	return fmt.Sprintf("provider answered %d: %s", e.StatusCode, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Refused reports whether the provider refused the request for good: a 4xx
// other than 408, 409 (Cog: its slots are busy) and 429. Everything else
// (5xx, 429, connection errors) is retried.
func (e *Error) Refused() bool {
	return e.StatusCode >= 400 && e.StatusCode < 500 &&
		e.StatusCode != http.StatusRequestTimeout && e.StatusCode != http.StatusConflict &&
		e.StatusCode != http.StatusTooManyRequests
}

// Refused reports whether err is a provider's refusal for good.
func Refused(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Refused()
}

// RetryAfter is the wait a provider asked for with err at now, at most
// MaxRetryAfter, or 0.
func RetryAfter(err error, now time.Time) time.Duration {
	var pe *Error
	if errors.As(err, &pe) {
		return retryafter.Parse(pe.RetryAfter, now, MaxRetryAfter)
	}
	return 0
}

// MaxMessage is how much of a provider's message a job's error keeps.
const MaxMessage = 300

// Trim cuts a provider's message to MaxMessage characters on a rune boundary.
func Trim(msg string) string {
	msg = strings.TrimSpace(msg)
	if utf8.RuneCountInString(msg) <= MaxMessage {
		return msg
	}
	r := []rune(msg)
	return string(r[:MaxMessage-1]) + "…"
}

// maxAnswer bounds a provider's JSON answer (not its outputs, which are
// streamed): a Cog prediction's data: URIs make it large.
const maxAnswer = 64 << 20

// Do sends req with client and returns the body of a 2xx answer; any other
// answer is an *Error with the provider's message (a JSON "detail",
// "error" or "title", else the body's text) and its Retry-After.
func Do(client *http.Client, req *http.Request) ([]byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, &Error{Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, &Error{Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return body, nil
	}
	return nil, &Error{StatusCode: resp.StatusCode, Message: Trim(message(body)), RetryAfter: resp.Header.Get("Retry-After")}
}

// NewRequest builds a JSON request; body nil sends none.
func NewRequest(ctx context.Context, method, url string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

func message(body []byte) string {
	var m struct {
		Detail any    `json:"detail"`
		Error  any    `json:"error"`
		Title  string `json:"title"`
	}
	if json.Unmarshal(body, &m) == nil {
		for _, v := range []any{m.Detail, m.Error} {
			switch x := v.(type) {
			case string:
				if x != "" {
					return x
				}
			case nil:
			default: // a validation error's list: its JSON says it all
				b, _ := json.Marshal(x)
				return string(b)
			}
		}
		if m.Title != "" {
			return m.Title
		}
	}
	return string(body)
}

// Outputs lists the URLs and data: URIs in a prediction's output, whatever
// its shape, in order (Strings).
func Outputs(output json.RawMessage) []string {
	return Strings(output, IsOutput)
}

// IsOutput tells an output to copy: a URL or a data: URI.
func IsOutput(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "data:")
}

// Strings lists the strings keep accepts in a prediction's output, whatever
// its shape (a string, a list, an object of them), in order: object keys
// sorted.
func Strings(output json.RawMessage, keep func(string) bool) []string {
	if all, ok := plainStrings(output); ok {
		return slices.DeleteFunc(all, func(s string) bool { return !keep(s) })
	}
	var v any
	if len(output) == 0 || json.Unmarshal(output, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if keep(x) {
				out = append(out, x)
			}
		case []any:
			for _, item := range x {
				walk(item)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

// Progress reads the last percentage a model's logs report, as 0..1: the
// last "%|" with a digit before it, and up to three digits before it
// ("45%|####   | 45/100", tqdm's form).
func Progress(logs string) *float64 {
	end := len(logs)
	for {
		i := strings.LastIndex(logs[:end], "%|")
		if i < 0 {
			return nil
		}
		j := i
		for j > 0 && i-j < 3 && '0' <= logs[j-1] && logs[j-1] <= '9' {
			j--
		}
		if j == i {
			end = i
			continue
		}
		n, _ := strconv.Atoi(logs[j:i])
		if n > 100 {
			return nil
		}
		p := float64(n) / 100
		return &p
	}
}

// plainStrings reads an output that is a string, or a list of strings,
// none with an escape: the form of a Cog server's data: URIs, whose
// megabytes of base64 are then found with a search for the closing quote
// rather than decoded character by character again. ok is false for
// anything else, which Strings decodes. The output is a value json.Unmarshal
// has read (a json.RawMessage), so its strings hold no control character;
// invalid UTF-8, which decoding would replace, is left to Strings.
func plainStrings(raw json.RawMessage) (all []string, ok bool) {
	const space = " \t\r\n"
	b := bytes.TrimLeft(raw, space)
	list := len(b) > 0 && b[0] == '['
	if list {
		b = bytes.TrimLeft(b[1:], space)
		if len(b) > 0 && b[0] == ']' {
			return nil, len(bytes.TrimLeft(b[1:], space)) == 0
		}
	}
	for {
		if len(b) == 0 || b[0] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(b[1:], '"')
		if end < 0 {
			return nil, false
		}
		s := b[1 : 1+end]
		if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
			return nil, false
		}
		all = append(all, string(s))
		b = bytes.TrimLeft(b[2+end:], space)
		switch {
		case !list:
			return all, len(b) == 0
		case len(b) > 0 && b[0] == ']':
			return all, len(bytes.TrimLeft(b[1:], space)) == 0
		case len(b) > 0 && b[0] == ',':
			b = bytes.TrimLeft(b[1:], space)
		default:
			return nil, false
		}
	}
}
