// Package checkout speaks to Stripe for the console's top-ups: it creates
// Checkout Sessions and verifies the webhook events that report them paid,
// failed or expired. It is the only code that speaks Stripe's API, through
// stripe-go (its checkout/session client and its webhook package, which
// verifies Stripe-Signature); the keys come from Secrets Manager at first use.
package checkout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// New returns a client that reads its keys from keys. It does no I/O.
func New(keys Keys, apiBase string) *Stripe {
	return &Stripe{keys: keys, apiBase: apiBase, http: &http.Client{Timeout: 8 * time.Second}}
}

func (s *Stripe) api() stripe.Backend {
	s.once.Lock()
	defer s.once.Unlock()
	if s.backend == nil {
		cfg := &stripe.BackendConfig{
			HTTPClient:        s.http,
			MaxNetworkRetries: stripe.Int64(1),
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

// SessionRequest is a top-up to pay.
type SessionRequest struct {
	TopUpID     string
	WorkspaceID string
	Amount      billing.Micros // whole cents
	SuccessURL  string         // may hold {CHECKOUT_SESSION_ID}
	CancelURL   string
}

// Session is a created Checkout Session: where to send the browser.
type Session struct {
	ID  string
	URL string
}

// CreateSession creates the Checkout Session of a pending top-up: one line
// item "API balance" in USD, the workspace as client_reference_id, the
// top-up's id in metadata, and the Idempotency-Key topup-{id}, so that a
// retry whose first answer was lost gets the same session back.
func (s *Stripe) CreateSession(ctx context.Context, r SessionRequest) (Session, error) {
	keys, err := s.keys.Keys(ctx)
	if err != nil {
		return Session{}, err
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode: stripe.String(string(stripe.CheckoutSessionModePayment)),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripe.String("usd"),
				UnitAmount:  stripe.Int64(r.Amount.Cents()),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String("API balance")},
			},
		}},
		ClientReferenceID: stripe.String(r.WorkspaceID),
		SuccessURL:        stripe.String(r.SuccessURL),
		CancelURL:         stripe.String(r.CancelURL),
	}
	params.AddMetadata("topup_id", r.TopUpID)
	params.SetIdempotencyKey("topup-" + r.TopUpID)
	sc := stripe.NewClient(keys.SecretKey, stripe.WithBackends(&stripe.Backends{API: s.api()}))
	cs, err := sc.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return Session{}, fmt.Errorf("checkout: create session for top-up %s: %w", r.TopUpID, err)
	}
	if cs.ID == "" || cs.URL == "" {
		return Session{}, fmt.Errorf("checkout: the session for top-up %s came back without id or url", r.TopUpID)
	}
	return Session{ID: cs.ID, URL: cs.URL}, nil
}

// ErrBadSignature: a webhook whose Stripe-Signature is missing, wrong or
// older than the tolerance (300 s). Nothing of it may be acted on.
var ErrBadSignature = errors.New("checkout: the webhook's signature does not verify")

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
// "{t}.{payload}", any v1 of the header, 300 s tolerance) and reads it. The
// event's API version may differ from stripe-go's: only fields stable
// across versions are read.
func (s *Stripe) VerifyEvent(ctx context.Context, payload []byte, header string) (Event, error) {
	keys, err := s.keys.Keys(ctx)
	if err != nil {
		return Event{}, err
	}
	ev, err := webhook.ConstructEventWithOptions(payload, header, keys.WebhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
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
		Currency: obj.Currency, ClientReferenceID: obj.ClientReferenceID, TopUpID: obj.Metadata["topup_id"]}
	return out, nil
}
