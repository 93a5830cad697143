package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/checkout"
	"genjobs/internal/console/pages"
	"genjobs/internal/store"
)

// refreshFor is how long the return page refreshes itself while the
// payment is processing: 20 tries, 3 seconds apart.
const (
	refreshEvery = 3
	refreshTries = 20
)

func (c *Console) billingData(r *http.Request, req *request) (pages.BillingData, error) {
	bal, err := c.Accounts.Balance(r.Context(), req.current.WorkspaceID)
	if err != nil {
		return pages.BillingData{}, err
	}
	cos, err := c.TopUps.Checkouts(r.Context(), req.current.WorkspaceID)
	if err != nil {
		return pages.BillingData{}, err
	}
	if len(cos) > 50 {
		cos = cos[:50]
	}
	units, plan, err := c.Accounts.Units(r.Context(), req.current.WorkspaceID)
	if err != nil {
		return pages.BillingData{}, err
	}
	d := pages.BillingData{Acting: req.acting(), Balance: bal, Checkouts: cos, CanTopUp: req.current.Role.AddsBalance(), Presets: billing.TopUpPresets,
		Units: units, Plan: plan}
	if d.CanTopUp {
		perUSD, err := c.Prices.UnitsPerUSD()
		if err != nil {
			return pages.BillingData{}, err
		}
		d.Packs = billing.OfferedPacks(perUSD)
	}
	return d, nil
}

func (c *Console) billingPage(w http.ResponseWriter, r *http.Request, req *request) {
	q := r.URL.Query()
	if id := q.Get("cancelled"); id != "" && !c.cancelled(w, r, req, id) {
		return
	}
	data, err := c.billingData(r, req)
	if err != nil {
		c.internalError(w, r, "read billing", err)
		return
	}
	v := c.view(req, "billing", "Billing")
	if id := q.Get("cancelled"); id != "" {
		for i := range data.Checkouts {
			if data.Checkouts[i].ID == id {
				data.Return = &data.Checkouts[i]
			}
		}
	}
	if sid := q.Get("checkout"); sid != "" {
		for i := range data.Checkouts {
			if data.Checkouts[i].SessionID == sid {
				data.Return = &data.Checkouts[i]
			}
		}
		tries, _ := strconv.Atoi(q.Get("try"))
		if data.Return != nil && data.Return.Status == billing.CheckoutPending && tries < refreshTries {
			v.Refresh, v.RefreshTo = refreshEvery, Base+"/settings/billing?"+
				url.Values{"checkout": {sid}, "try": {strconv.Itoa(tries + 1)}}.Encode()
		}
	}
	v.Notice = notices[q.Get("done")]
	c.show(w, r, http.StatusOK, v, pages.Billing(data))
}

// cleanupTimeout bounds the write that marks a top-up failed after its
// Checkout Session could not be made: within httpapi.AnswerMargin, which
// the request keeps after its own deadline.
const cleanupTimeout = 500 * time.Millisecond

func newTopUpID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "top_" + hex.EncodeToString(b[:])
}

// topUp records a pending top-up, creates its Checkout Session and sends
// the browser there: of the API balance (the form's amount), or a pack of
// compute units (the form's pack, priced at the price file's
// compute_units_per_usd now, and kept so until it is paid). Nothing
// changes a balance until Stripe's webhook says the session is paid
// (package stripehook).
func (c *Console) topUp(w http.ResponseWriter, r *http.Request, req *request) {
	var amount billing.Micros
	var units billing.Units
	if raw, pack := r.PostForm.Get("pack"), r.PostForm.Has("pack"); pack {
		perUSD, err := c.Prices.UnitsPerUSD()
		if err != nil {
			c.internalError(w, r, "read the price file", err)
			return
		}
		p, err := billing.ParsePack(raw, perUSD)
		if err != nil {
			c.refuseTopUp(w, r, req, func(d *pages.BillingData) { d.PackError = "There is no such pack. " + sentence(err.Error()) })
			return
		}
		amount, units = p.Price, p.Units
	} else {
		raw := r.PostForm.Get("amount")
		m, err := billing.ParseTopUpAmount(raw)
		if err != nil {
			c.refuseTopUp(w, r, req, func(d *pages.BillingData) { d.Amount, d.AmountError = raw, sentence(err.Error()) })
			return
		}
		amount = m
	}
	now := c.Clock.Now()
	co := billing.Checkout{ID: newTopUpID(), WorkspaceID: req.current.WorkspaceID, Status: billing.CheckoutPending,
		Requested: amount, Units: units, CreatedBy: req.session.Email, CreatedAt: now}
	if err := c.TopUps.CreateCheckout(r.Context(), co); err != nil {
		c.internalError(w, r, "record top-up", err)
		return
	}
	s, err := c.Payments.CreateSession(r.Context(), checkoutRequest(c.appURL(r), co))
	if err != nil {
		// The top-up is marked failed: the browser never saw a page to pay
		// on. Also when the request's time ran out waiting for Stripe: the
		// mark has time of its own (cleanupTimeout, inside the answer's
		// margin), or the top-up would stay pending a day.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), cleanupTimeout)
		defer cancel()
		if _, merr := c.TopUps.EndCheckout(ctx, co.WorkspaceID, co.ID, billing.CheckoutFailed, now); merr != nil {
			c.logger(r).Error("mark top-up failed", "topup_id", co.ID, "error", merr.Error())
		}
		c.logger(r).Error("create checkout session", "topup_id", co.ID, "error", err.Error())
		c.fail(w, r, http.StatusBadGateway, "The payment provider could not be reached, and nothing was charged. Try again in a moment.")
		return
	}
	if err := c.TopUps.SetCheckoutSession(r.Context(), co.WorkspaceID, co.ID, s.ID, now); err != nil {
		// The webhook credits by the top-up's id and records the session
		// itself; this write only lets the return page find it sooner.
		c.logger(r).Warn("record checkout session", "topup_id", co.ID, "error", err.Error())
	}
	c.logger(r).Info("top-up started", "workspace_id", co.WorkspaceID, "topup_id", co.ID, "session_id", s.ID, "amount_usd", amount.String(), "pack_units", int64(units))
	http.Redirect(w, r, s.URL, http.StatusSeeOther)
}

// refuseTopUp answers a top-up form that cannot be taken: the billing page
// again, 400, with the refusal beside its form (set), and nothing written.
func (c *Console) refuseTopUp(w http.ResponseWriter, r *http.Request, req *request, set func(*pages.BillingData)) {
	data, err := c.billingData(r, req)
	if err != nil {
		c.internalError(w, r, "read billing", err)
		return
	}
	set(&data)
	c.show(w, r, http.StatusBadRequest, c.view(req, "billing", "Billing"), pages.Billing(data))
}

// checkoutRequest is the Checkout Session of top-up co, with the URLs
// Stripe sends the browser back to: the return page, by the session's id
// once paid, and by the top-up's id when the payer cancels.
func checkoutRequest(appURL string, co billing.Checkout) checkout.SessionRequest {
	return checkout.SessionRequest{TopUpID: co.ID, WorkspaceID: co.WorkspaceID, Amount: co.Requested, Units: co.Units,
		SuccessURL: appURL + "/settings/billing?checkout={CHECKOUT_SESSION_ID}",
		CancelURL:  appURL + "/settings/billing?" + url.Values{"cancelled": {co.ID}}.Encode()}
}

// cancelled marks the top-up a payer left by the checkout's Cancel
// (cancel_url's ?cancelled=) cancelled, when it is the workspace's own and
// still pending, and returns it for the page's notice; again (a reload) it
// changes nothing. A top-up paid meanwhile stays paid. ok is false when the
// answer is written.
func (c *Console) cancelled(w http.ResponseWriter, r *http.Request, req *request, id string) (ok bool) {
	if !validTopUpID(id) {
		return true // nothing of ours: the page as usual
	}
	_, err := c.TopUps.EndCheckout(r.Context(), req.current.WorkspaceID, id, billing.CheckoutCancelled, c.Clock.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true
	case err != nil:
		c.internalError(w, r, "cancel top-up", err)
		return false
	}
	c.logger(r).Info("top-up cancelled at checkout", "workspace_id", req.current.WorkspaceID, "topup_id", id)
	return true
}

// validTopUpID says whether id has the form newTopUpID makes.
func validTopUpID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, "top_")
	if !ok || len(hexPart) != 24 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}

// sentence writes an error's text for a page: capitalised, with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}
