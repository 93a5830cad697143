// Package stripehook is Stripe's webhook, POST /webhooks/stripe: the one way
// a top-up by checkout reaches the balance, and a pack of compute units the
// workspace's units (docs/console.md). A verified event
// (checkout.VerifyEvent) about a session this deployment created is
// credited once, for exactly the amount, currency and pack the top-up
// recorded; failed and expired sessions end their top-up.
//
// Stripe retries every answer that is not a 2xx, for days. So a refusal
// that retrying cannot fix (an event about someone else's session, or one
// that disagrees with its top-up) is a 200 that changes nothing, logged at
// ERROR and counted (metrics.StripeAnomalies, which an alarm watches);
// a bad signature is a 400; an outage of the table or of Secrets Manager is
// a 503 with Retry-After, so that Stripe sends the event again.
package stripehook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/checkout"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/metrics"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
)

// Path is the webhook's route (template.yaml's StripeWebhookFunction).
const Path = "/webhooks/stripe"

const msgBadSignature = "The Stripe-Signature header is missing, wrong, too old or in the future."

// Store reads and moves top-ups (topupsdb.DB).
type Store interface {
	Checkout(ctx context.Context, ws, id string) (billing.Checkout, error)
	CreditCheckout(ctx context.Context, ws, id, sessionID string, amount billing.Micros, units billing.Units, at time.Time) (bool, error)
	EndCheckout(ctx context.Context, ws, id string, status billing.CheckoutStatus, at time.Time) (bool, error)
}

// Events verifies and reads Stripe's events (checkout.Stripe).
type Events interface {
	VerifyEvent(ctx context.Context, payload []byte, header string, now time.Time) (checkout.Event, error)
}

// Handler serves the webhook.
type Handler struct {
	Store   Store
	Events  Events
	Clock   clock.Clock
	Metrics *metrics.Emitter // nil counts nothing
}

// Routes is the webhook's router; httpapi.Middleware goes around it.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+Path, h.serve)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		httpapi.WriteError(w, http.StatusNotFound, httpapi.MsgNotFound)
	})
	return mux
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, checkout.MaxEventBytes))
	if err != nil {
		httpapi.WriteError(w, http.StatusRequestEntityTooLarge, "The event is larger than 256 KiB.")
		return
	}
	log := httpapi.Logger(r.Context())
	// One header, t=...,v1=...[,v1=...]; a client that sent it in pieces
	// gets them joined as HTTP joins repeated headers.
	header := strings.Join(r.Header.Values(checkout.SignatureHeader), ",")
	if header == "" { // refused before the keys are read
		log.Warn("stripe webhook refused", "reason", "no Stripe-Signature header")
		httpapi.WriteError(w, http.StatusBadRequest, msgBadSignature)
		return
	}
	ev, err := h.Events.VerifyEvent(r.Context(), payload, header, h.Clock.Now())
	if errors.Is(err, checkout.ErrBadSignature) {
		log.Warn("stripe webhook refused", "reason", err.Error())
		httpapi.WriteError(w, http.StatusBadRequest, msgBadSignature)
		return
	}
	if err != nil {
		httpapi.InternalError(w, r, "stripe webhook: read the keys", err)
		return
	}
	log = log.With("event_id", ev.ID, "event_type", ev.Type, "session_id", ev.Session.ID)
	if err := h.handle(r.Context(), log, ev); err != nil {
		httpapi.InternalError(w, r, "stripe webhook", err)
		return
	}
	received(w)
}

// anomaly is an event that disagrees with what this deployment recorded:
// answered 200 (Stripe's retries could not change it), nothing changed.
type anomaly struct{ reason string }

func (a anomaly) Error() string { return a.reason }

func (h *Handler) handle(ctx context.Context, log *slog.Logger, ev checkout.Event) error {
	s := ev.Session
	var end billing.CheckoutStatus
	switch ev.Type {
	case checkout.SessionCompleted, checkout.SessionAsyncSucceeded:
		if s.PaymentStatus != "paid" {
			// A delayed payment method: async_payment_succeeded or _failed follows.
			log.Info("checkout completed, payment not yet received", "payment_status", s.PaymentStatus)
			return nil
		}
	case checkout.SessionAsyncFailed:
		end = billing.CheckoutFailed
	case checkout.SessionExpired:
		end = billing.CheckoutExpired
	default:
		return nil
	}
	if s.ClientReferenceID == "" || s.TopUpID == "" {
		// Another application's session on the same Stripe account.
		log.Info("stripe webhook about a session this deployment did not create")
		return nil
	}
	err := h.apply(ctx, log, ev, end)
	var a anomaly
	if errors.As(err, &a) {
		log.Error("stripe webhook anomaly: nothing changed", "reason", a.reason, "workspace_id", s.ClientReferenceID,
			"topup_id", s.TopUpID, "amount_total", s.AmountTotal, "currency", s.Currency, "pack_units", int64(s.PackUnits))
		h.Metrics.Count(metrics.StripeAnomalies, "", 1)
		return nil
	}
	return err
}

// apply ends or credits the session's top-up. An anomaly is returned as
// such; any other error is the table's.
func (h *Handler) apply(ctx context.Context, log *slog.Logger, ev checkout.Event, end billing.CheckoutStatus) error {
	s := ev.Session
	co, err := h.Store.Checkout(ctx, s.ClientReferenceID, s.TopUpID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return anomaly{"the session names a top-up this deployment does not have"}
	case err != nil:
		return err
	case co.SessionID != "" && co.SessionID != s.ID:
		return anomaly{"the top-up belongs to another session (" + co.SessionID + ")"}
	}
	now := h.Clock.Now()
	if end != "" {
		changed, err := h.Store.EndCheckout(ctx, co.WorkspaceID, co.ID, end, now)
		if err != nil {
			return err
		}
		log.Info("top-up ended", "topup_id", co.ID, "status", end, "changed", changed)
		return nil
	}
	// Exactly what was asked, in USD: amount_total is compared in cents,
	// never multiplied first (a huge total would overflow micro-USD).
	if !strings.EqualFold(s.Currency, "usd") {
		return anomaly{"the session is not in USD"}
	}
	if s.AmountTotal != co.Requested.Cents() || co.Requested%billing.Cent != 0 {
		return anomaly{"the session's amount_total differs from the top-up's " + co.Requested.Dollars() + " USD"}
	}
	// A pack credits the units chosen when it was bought, which the
	// session's metadata must name too: a session that says another pack
	// (or none, or one for a top-up of the API balance) changes nothing.
	if s.PackUnits != co.Units {
		return anomaly{"the session's pack (" + s.PackUnits.String() + " units) differs from the top-up's (" + co.Units.String() + " units)"}
	}
	credited, err := h.Store.CreditCheckout(ctx, co.WorkspaceID, co.ID, s.ID, co.Requested, co.Units, now)
	switch {
	case errors.Is(err, accountsdb.ErrPaymentConflict):
		return anomaly{"the session was credited before with another amount"}
	case errors.Is(err, store.ErrNotFound):
		return anomaly{"the top-up belongs to another session"}
	case err != nil:
		return err
	}
	if co.IsPack() {
		log.Info("pack paid", "workspace_id", co.WorkspaceID, "topup_id", co.ID, "amount_usd", co.Requested.String(), "units", int64(co.Units), "credited_now", credited)
		return nil
	}
	log.Info("top-up paid", "workspace_id", co.WorkspaceID, "topup_id", co.ID, "amount_usd", co.Requested.String(), "credited_now", credited)
	return nil
}

// received is Stripe's 200: {"received": true}.
func received(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]bool{"received": true})
}
