package console

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"genjobs/internal/billing"
	"genjobs/internal/checkout"
	"genjobs/internal/store"
)

// stripeWebhook is POST /webhooks/stripe, the one way a top-up reaches the
// balance: a verified event (checkout.VerifyEvent) about a session this
// deployment created. Stripe retries whatever is not a 2xx, so a refusal
// that retrying cannot fix (an event about someone else's session) is a
// 200 that changes nothing, and an outage is a 5xx.
func (c *Console) stripeWebhook(w http.ResponseWriter, r *http.Request) {
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, checkout.MaxEventBytes))
	if err != nil {
		webhookAnswer(w, http.StatusRequestEntityTooLarge, "The event is larger than 256 KiB.")
		return
	}
	// One header, t=...,v1=...[,v1=...]; a client that sent it in pieces
	// gets them joined as HTTP joins repeated headers.
	header := strings.Join(r.Header.Values(checkout.SignatureHeader), ",")
	ev, err := c.Payments.VerifyEvent(r.Context(), payload, header)
	if errors.Is(err, checkout.ErrBadSignature) {
		c.logger(r).Warn("stripe webhook refused", "reason", err.Error())
		webhookAnswer(w, http.StatusBadRequest, "The Stripe-Signature header is missing, wrong or too old.")
		return
	}
	if err != nil {
		c.logger(r).Error("stripe webhook: read the keys", "error", err.Error())
		webhookAnswer(w, http.StatusInternalServerError, "Internal server error.")
		return
	}
	l := c.logger(r).With("event_id", ev.ID, "event_type", ev.Type, "session_id", ev.Session.ID)
	s := ev.Session
	var status billing.CheckoutStatus
	switch ev.Type {
	case checkout.SessionCompleted, checkout.SessionAsyncSucceeded:
		if s.PaymentStatus != "paid" {
			// A delayed payment method: async_payment_succeeded or _failed follows.
			l.Info("checkout completed, payment not yet received", "payment_status", s.PaymentStatus)
			webhookAnswer(w, http.StatusOK, "")
			return
		}
	case checkout.SessionAsyncFailed:
		status = billing.CheckoutFailed
	case checkout.SessionExpired:
		status = billing.CheckoutExpired
	default:
		webhookAnswer(w, http.StatusOK, "")
		return
	}
	co, err := c.Store.Checkout(r.Context(), s.ClientReferenceID, s.TopUpID)
	switch {
	case s.ClientReferenceID == "" || s.TopUpID == "" || errors.Is(err, store.ErrNotFound):
		l.Warn("stripe webhook about a session this deployment did not create", "workspace_id", s.ClientReferenceID, "topup_id", s.TopUpID)
		webhookAnswer(w, http.StatusOK, "")
		return
	case err != nil:
		c.webhookError(w, r, "read top-up", err)
		return
	case co.SessionID != "" && co.SessionID != s.ID:
		l.Warn("stripe webhook: the top-up belongs to another session", "topup_id", co.ID, "expected_session_id", co.SessionID)
		webhookAnswer(w, http.StatusOK, "")
		return
	}
	now := c.Clock.Now()
	if status != "" {
		changed, err := c.Store.EndCheckout(r.Context(), co.WorkspaceID, co.ID, status, now)
		if err != nil {
			c.webhookError(w, r, "end top-up", err)
			return
		}
		l.Info("top-up ended", "topup_id", co.ID, "status", status, "changed", changed)
		webhookAnswer(w, http.StatusOK, "")
		return
	}
	if !strings.EqualFold(s.Currency, "usd") || s.AmountTotal <= 0 {
		l.Error("stripe webhook: a paid session not in USD or without an amount; nothing credited", "currency", s.Currency, "amount_total", s.AmountTotal)
		webhookAnswer(w, http.StatusOK, "")
		return
	}
	// amount_total is what was paid; the form's figure is never credited.
	amount := billing.Micros(s.AmountTotal) * billing.Cent
	credited, err := c.Store.CreditCheckout(r.Context(), co.WorkspaceID, co.ID, s.ID, amount, now)
	if err != nil {
		c.webhookError(w, r, "credit top-up", err)
		return
	}
	if amount != co.Requested {
		l.Warn("checkout total differs from the amount asked for", "topup_id", co.ID, "requested_usd", co.Requested.String(), "paid_usd", amount.String())
	}
	l.Info("top-up paid", "workspace_id", co.WorkspaceID, "topup_id", co.ID, "amount_usd", amount.String(), "credited_now", credited)
	webhookAnswer(w, http.StatusOK, "")
}

func (c *Console) webhookError(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.logger(r).Error("stripe webhook: "+what, "error", err.Error())
	webhookAnswer(w, http.StatusInternalServerError, "Internal server error.")
}

// webhookAnswer is a JSON answer for Stripe: {"received": true}, or an error.
func webhookAnswer(w http.ResponseWriter, status int, errMsg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if errMsg != "" {
		_ = json.NewEncoder(w).Encode(map[string]string{"error": errMsg})
		return
	}
	_, _ = w.Write([]byte(`{"received":true}` + "\n"))
}
