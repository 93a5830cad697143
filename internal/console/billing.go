package console

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"genjobs/internal/billing"
	"genjobs/internal/checkout"
)

type billingData struct {
	Balance   billing.Balance
	Checkouts []billing.Checkout
	CanTopUp  bool
	Presets   []int
	// Amount and AmountError: the custom amount field after a refusal.
	Amount, AmountError string
	// Return is the checkout the browser came back from (?checkout=), with
	// whether it is credited yet; Refresh asks the page to reload itself.
	Return  *billing.Checkout
	Refresh string
}

// refreshFor is how long the return page refreshes itself while the
// payment is processing: 20 tries, 3 seconds apart.
const (
	refreshEvery = 3
	refreshTries = 20
)

func (c *Console) billingData(r *http.Request, req *request) (billingData, error) {
	bal, err := c.Store.Balance(r.Context(), req.current.WorkspaceID)
	if err != nil {
		return billingData{}, err
	}
	cos, err := c.Store.Checkouts(r.Context(), req.current.WorkspaceID)
	if err != nil {
		return billingData{}, err
	}
	if len(cos) > 50 {
		cos = cos[:50]
	}
	return billingData{Balance: bal, Checkouts: cos, CanTopUp: req.current.Role.AddsBalance(), Presets: billing.TopUpPresets}, nil
}

func (c *Console) billingPage(w http.ResponseWriter, r *http.Request, req *request) {
	data, err := c.billingData(r, req)
	if err != nil {
		c.internalError(w, r, "read billing", err)
		return
	}
	v := c.view(req, "billing", "Billing")
	q := r.URL.Query()
	if sid := q.Get("checkout"); sid != "" {
		for i := range data.Checkouts {
			if data.Checkouts[i].SessionID == sid {
				data.Return = &data.Checkouts[i]
			}
		}
		tries, _ := strconv.Atoi(q.Get("try"))
		if data.Return != nil && data.Return.Status == billing.CheckoutPending && tries < refreshTries {
			data.Refresh = strconv.Itoa(refreshEvery) + ";url=" + Base + "/settings/billing?" +
				url.Values{"checkout": {sid}, "try": {strconv.Itoa(tries + 1)}}.Encode()
		}
	}
	v.Notice, v.Data = notices[q.Get("done")], data
	c.render(w, r, http.StatusOK, "billing", v)
}

func newTopUpID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "top_" + hex.EncodeToString(b[:])
}

// topUp records a pending top-up, creates its Checkout Session and sends
// the browser there. The balance changes only when Stripe's webhook says
// the session is paid (stripeWebhook).
func (c *Console) topUp(w http.ResponseWriter, r *http.Request, req *request) {
	raw := r.PostForm.Get("amount")
	amount, err := billing.ParseTopUpAmount(raw)
	if err != nil {
		data, derr := c.billingData(r, req)
		if derr != nil {
			c.internalError(w, r, "read billing", derr)
			return
		}
		data.Amount, data.AmountError = raw, sentence(err.Error())
		v := c.view(req, "billing", "Billing")
		v.Data = data
		c.render(w, r, http.StatusBadRequest, "billing", v)
		return
	}
	now := c.Clock.Now()
	co := billing.Checkout{ID: newTopUpID(), WorkspaceID: req.current.WorkspaceID, Status: billing.CheckoutPending,
		Requested: amount, CreatedBy: req.session.Email, CreatedAt: now}
	if err := c.Store.CreateCheckout(r.Context(), co); err != nil {
		c.internalError(w, r, "record top-up", err)
		return
	}
	s, err := c.Payments.CreateSession(r.Context(), checkoutRequest(c.appURL(r), co))
	if err != nil {
		// The top-up is marked failed: the browser never saw a page to pay on.
		if _, merr := c.Store.EndCheckout(r.Context(), co.WorkspaceID, co.ID, billing.CheckoutFailed, now); merr != nil {
			c.logger(r).Error("mark top-up failed", "topup_id", co.ID, "error", merr.Error())
		}
		c.logger(r).Error("create checkout session", "topup_id", co.ID, "error", err.Error())
		c.fail(w, r, http.StatusBadGateway, "The payment provider could not be reached, and nothing was charged. Try again in a moment.")
		return
	}
	if err := c.Store.SetCheckoutSession(r.Context(), co.WorkspaceID, co.ID, s.ID, now); err != nil {
		// The webhook credits by the top-up's id and records the session
		// itself; this write only lets the return page find it sooner.
		c.logger(r).Warn("record checkout session", "topup_id", co.ID, "error", err.Error())
	}
	c.logger(r).Info("top-up started", "workspace_id", co.WorkspaceID, "topup_id", co.ID, "session_id", s.ID, "amount_usd", amount.String())
	http.Redirect(w, r, s.URL, http.StatusSeeOther)
}

func checkoutRequest(appURL string, co billing.Checkout) checkout.SessionRequest {
	return checkout.SessionRequest{TopUpID: co.ID, WorkspaceID: co.WorkspaceID, Amount: co.Requested,
		SuccessURL: appURL + "/settings/billing?checkout={CHECKOUT_SESSION_ID}",
		CancelURL:  appURL + "/settings/billing"}
}

// sentence writes an error's text for a page: capitalised, with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}
