// Package checkout speaks to Stripe for the console's top-ups (of the API
// balance, and packs of compute units): it creates
// Checkout Sessions and verifies the webhook events that report them paid,
// failed or expired. It is the only code that speaks Stripe's API, through
// stripe-go (its API backend, for the Checkout Sessions, and its webhook package, which
// verifies Stripe-Signature); the keys come from Secrets Manager at first use.
package checkout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"genjobs/internal/billing"
	"genjobs/internal/secrets"
)

// Keys gives the Stripe keys (secrets.Stripe).
type Keys interface {
	Keys(ctx context.Context) (secrets.StripeKeys, error)
}

// Stripe creates Checkout Sessions and verifies webhook events.
type Stripe struct {
	keys Keys
	// APIBase is Stripe's API address: empty for api.stripe.com, the local
	// test double's address in the local stack.
	apiBase string
	http    *http.Client

	once    sync.Mutex
	backend stripe.Backend
}

// A call of Stripe's API is tried at most Retries+1 times, each for at
// most RequestTimeout, with stripe-go's pause between tries (0.75 to 1 s
// before the first retry): MaxCallTime in all, which the console's
// function timeout in template.yaml holds with room for its table calls
// (a test of the template checks it).
const (
	RequestTimeout = 3 * time.Second
	Retries        = 1
	retryPause     = time.Second
	MaxCallTime    = (Retries+1)*RequestTimeout + Retries*retryPause
)

// New returns a client that reads its keys from keys. It does no I/O.
func New(keys Keys, apiBase string) *Stripe {
	return &Stripe{keys: keys, apiBase: apiBase, http: &http.Client{Timeout: RequestTimeout}}
}

func (s *Stripe) api() stripe.Backend {
	s.once.Lock()
	defer s.once.Unlock()
	if s.backend == nil {
		cfg := &stripe.BackendConfig{
			HTTPClient:        s.http,
			MaxNetworkRetries: stripe.Int64(Retries),
			// Our own log lines say what failed; stripe-go's would print
			// request details to standard error.
			LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
		}
		if s.apiBase != "" {
			cfg.URL = stripe.String(s.apiBase)
		}
		s.backend = stripe.GetBackendWithConfig(stripe.APIBackend, cfg)
	}
	return s.backend
}

// SessionRequest is a top-up to pay: of the API balance, or a pack of
// compute units (Units > 0).
type SessionRequest struct {
	TopUpID     string
	WorkspaceID string
	Amount      billing.Micros // whole cents
	Units       billing.Units  // a pack's compute units; 0 for the API balance
	SuccessURL  string         // may hold {CHECKOUT_SESSION_ID}
	CancelURL   string
}

// Session is a created Checkout Session: where to send the browser.
type Session struct {
	ID  string
	URL string
}

// Products are the line items' names: a top-up of the API balance, and a
// pack of compute units.
const (
	ProductBalance = "API balance"
	ProductUnits   = "Compute units"
)

// CreateSession creates the Checkout Session of a pending top-up: one line
// item in USD, "API balance" or, for a pack, "Compute units" (with the
// pack's units as its description and in metadata.pack_units), the
// workspace as client_reference_id, the top-up's id in metadata, and the
// Idempotency-Key topup-{id}, so that a retry whose first answer was lost
// gets the same session back.
func (s *Stripe) CreateSession(ctx context.Context, r SessionRequest) (Session, error) {
	keys, err := s.keys.Keys(ctx)
	if err != nil {
		return Session{}, err
	}
	product := &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(ProductBalance)}
	if r.Units > 0 {
		product = &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(ProductUnits),
			Description: stripe.String(r.Units.Grouped() + " compute units")}
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode: stripe.String(string(stripe.CheckoutSessionModePayment)),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripe.String("usd"),
				UnitAmount:  stripe.Int64(r.Amount.Cents()),
				ProductData: product,
			},
		}},
		ClientReferenceID: stripe.String(r.WorkspaceID),
		SuccessURL:        stripe.String(r.SuccessURL),
		CancelURL:         stripe.String(r.CancelURL),
	}
	params.AddMetadata("topup_id", r.TopUpID)
	if r.Units > 0 {
		params.AddMetadata(packMetadata, r.Units.String())
	}
	params.SetIdempotencyKey("topup-" + r.TopUpID)
	// What the checkout session service's Create does, on a result of the
	// two fields read: stripe-go's client of every service and its whole
	// CheckoutSession type would add 0.2 MB to the console's binary
	// (docs/performance.md, "Binary sizes and cold starts").
	params.Context = ctx
	var cs createdSession
	if err := s.api().Call(http.MethodPost, "/v1/checkout/sessions", keys.SecretKey, params, &cs); err != nil {
		return Session{}, fmt.Errorf("checkout: create session for top-up %s: %w", r.TopUpID, err)
	}
	if cs.ID == "" || cs.URL == "" {
		return Session{}, fmt.Errorf("checkout: the session for top-up %s came back without id or url", r.TopUpID)
	}
	return Session{ID: cs.ID, URL: cs.URL}, nil
}

// createdSession is what CreateSession reads of the Checkout Session
// Stripe answers.
type createdSession struct {
	stripe.APIResource
	ID  string `json:"id"`
	URL string `json:"url"`
}

// ErrBadSignature: a webhook whose Stripe-Signature is missing or wrong, or
// whose signed timestamp is more than Tolerance away from now, before or
// after. Nothing of it may be acted on.
var ErrBadSignature = errors.New("checkout: the webhook's signature does not verify")

// Tolerance is how far a webhook's signed timestamp may be from now, either
// way: Stripe's 300 s against a replay of an old event, and the same
// against one signed in the future (stripe-go checks only the past).
const Tolerance = 300 * time.Second

// Event is a verified webhook event about a Checkout Session.
type Event struct {
	ID      string
	Type    string
	Session EventSession
}

// EventSession is what an event says of its Checkout Session.
type EventSession struct {
	ID                string
	PaymentStatus     string // paid, unpaid, no_payment_required
	AmountTotal       int64  // cents
	Currency          string
	ClientReferenceID string // the workspace
	TopUpID           string // metadata.topup_id
	// PackUnits is metadata.pack_units: a pack's compute units, 0 for a
	// top-up of the API balance, -1 when it is there but not a number.
	PackUnits billing.Units
}

// packMetadata is the metadata key of a pack's units.
const packMetadata = "pack_units"

// packUnits reads metadata.pack_units.
func packUnits(meta map[string]string) billing.Units {
	v, ok := meta[packMetadata]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return -1
	}
	return billing.Units(n)
}

// Event types the console acts on.
const (
	SessionCompleted            = "checkout.session.completed"
	SessionAsyncSucceeded       = "checkout.session.async_payment_succeeded"
	SessionAsyncFailed          = "checkout.session.async_payment_failed"
	SessionExpired              = "checkout.session.expired"
	SignatureHeader             = "Stripe-Signature"
	MaxEventBytes         int64 = 256 << 10
)

// VerifyEvent checks payload against its Stripe-Signature header with the
// endpoint's signing secret (stripe-go's webhook package: HMAC-SHA256 of
// "{t}.{payload}", any v1 of the header) and its signed timestamp against
// now (Tolerance, both ways), and reads it. The event's API version may
// differ from stripe-go's: only fields stable across versions are read.
func (s *Stripe) VerifyEvent(ctx context.Context, payload []byte, header string, now time.Time) (Event, error) {
	keys, err := s.keys.Keys(ctx)
	if err != nil {
		return Event{}, err
	}
	// stripe-go's own tolerance reads the wall clock and lets a future
	// timestamp through: the signature only, then the time here.
	ev, err := webhook.ConstructEventWithOptions(payload, header, keys.WebhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true, IgnoreTolerance: true})
	if err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	signed, ok := signedAt(header)
	switch {
	case !ok:
		return Event{}, fmt.Errorf("%w: no timestamp", ErrBadSignature)
	case now.Sub(signed) > Tolerance:
		return Event{}, fmt.Errorf("%w: signed %s before now", ErrBadSignature, now.Sub(signed).Round(time.Second))
	case signed.Sub(now) > Tolerance:
		return Event{}, fmt.Errorf("%w: signed %s in the future", ErrBadSignature, signed.Sub(now).Round(time.Second))
	}
	out := Event{ID: ev.ID, Type: string(ev.Type)}
	if ev.Data == nil || len(ev.Data.Raw) == 0 {
		return out, nil
	}
	var obj struct {
		Object            string            `json:"object"`
		ID                string            `json:"id"`
		PaymentStatus     string            `json:"payment_status"`
		AmountTotal       int64             `json:"amount_total"`
		Currency          string            `json:"currency"`
		ClientReferenceID string            `json:"client_reference_id"`
		Metadata          map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(ev.Data.Raw, &obj); err != nil || obj.Object != "checkout.session" {
		return out, nil // not a session: the caller ignores the type anyway
	}
	out.Session = EventSession{ID: obj.ID, PaymentStatus: obj.PaymentStatus, AmountTotal: obj.AmountTotal,
		Currency: obj.Currency, ClientReferenceID: obj.ClientReferenceID, TopUpID: obj.Metadata["topup_id"],
		PackUnits: packUnits(obj.Metadata)}
	return out, nil
}

// signedAt is the t= of a Stripe-Signature header as stripe-go reads it
// (the last t= wins), which the verified signature covers.
func signedAt(header string) (time.Time, bool) {
	var t time.Time
	ok := false
	for _, pair := range strings.Split(header, ",") {
		k, v, found := strings.Cut(pair, "=")
		if !found || k != "t" {
			continue
		}
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		t, ok = time.Unix(sec, 0), true
	}
	return t, ok
}
