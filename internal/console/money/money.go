// Package money is the console's billing and usage pages (docs/console.md,
// "Billing: Stripe Checkout", "Compute units"): the workspace's balances, its top-ups by Stripe
// Checkout and the packs of compute units it can buy, and what it spent
// in a window, in USD and in compute units. Each page is a step that
// answers what to show (Shown); the console (package console) checks who
// asks and writes the answer in its layout, as it does the playground's.
// Nothing here changes a balance: Stripe's webhook credits a paid top-up
// (package stripehook).
package money

import (
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"genjobs/internal/billing"
	"genjobs/internal/checkout"
	"genjobs/internal/clock"
	"genjobs/internal/console/chart"
	"genjobs/internal/console/pages"
	"genjobs/internal/httpapi"
	"genjobs/internal/store"
)

// Accounts is the workspace's balances (accountsdb.DB).
type Accounts interface {
	Balance(ctx context.Context, ws string) (billing.Balance, error)
	Units(ctx context.Context, ws string) (billing.UnitBalance, billing.Units, error)
}

// TopUps is the top-ups by checkout (topupsdb.DB).
type TopUps interface {
	Checkouts(ctx context.Context, ws string) ([]billing.Checkout, error)
	CreateCheckout(ctx context.Context, c billing.Checkout) error
	SetCheckoutSession(ctx context.Context, ws, id, sessionID string, at time.Time) error
	EndCheckout(ctx context.Context, ws, id string, status billing.CheckoutStatus, at time.Time) (bool, error)
}

// Ledger is the charges usage sums (ledgerdb.DB).
type Ledger interface {
	Charges(ctx context.Context, ws string, from, to time.Time) ([]billing.Entry, error)
	UnitCharges(ctx context.Context, ws string, from, to time.Time) ([]billing.Entry, error)
}

// Payments is Stripe Checkout (checkout.Stripe).
type Payments interface {
	CreateSession(ctx context.Context, r checkout.SessionRequest) (checkout.Session, error)
}

// Prices gives the price file's compute units per USD, at which packs are
// priced (prices.List).
type Prices interface {
	UnitsPerUSD() (int64, error)
}

// Pages are the billing and usage pages' steps.
type Pages struct {
	Accounts Accounts
	TopUps   TopUps
	Ledger   Ledger
	Payments Payments
	Prices   Prices
	Clock    clock.Clock
	// AppURL is the console's public address (console.Config.AppURL):
	// Stripe's return URLs are made from it.
	AppURL string
}

// Session is who asks: the workspace they act in, with their role, and
// what their forms send (pages.Acting), and their email.
type Session struct {
	Acting pages.Acting
	Email  string
}

func (s Session) workspace() string { return s.Acting.Workspace.WorkspaceID }

// Shown is what a step answers: a page (Title, Page at Status, with the
// layout's Refresh), a redirect, the error page (Failed), or an answer
// written as it is (Write: a download).
type Shown struct {
	Title     string
	Page      templ.Component
	Status    int
	Refresh   int    // seconds after which the page reloads itself
	RefreshTo string // the address it then loads
	Redirect  string
	Failed    *Failure
	Write     func(http.ResponseWriter)
}

// Failure is the error page's status and message.
type Failure struct {
	Status  int
	Message string
}

// Internal is a step's failure of ours (or a dependency's outage): the
// console logs What with Err, and answers the fixed page (a 503 for an
// outage).
type Internal struct {
	What string
	Err  error
}

func (e *Internal) Error() string { return e.What + ": " + e.Err.Error() }
func (e *Internal) Unwrap() error { return e.Err }

func internal(what string, err error) error { return &Internal{What: what, Err: err} }

// refreshEvery and refreshTries: how the return page refreshes itself
// while the payment is processing: 20 tries, 3 seconds apart.
const (
	refreshEvery = 3
	refreshTries = 20
)

func (p *Pages) billingData(ctx context.Context, s Session) (pages.BillingData, error) {
	bal, err := p.Accounts.Balance(ctx, s.workspace())
	if err != nil {
		return pages.BillingData{}, err
	}
	cos, err := p.TopUps.Checkouts(ctx, s.workspace())
	if err != nil {
		return pages.BillingData{}, err
	}
	if len(cos) > 50 {
		cos = cos[:50]
	}
	units, plan, err := p.Accounts.Units(ctx, s.workspace())
	if err != nil {
		return pages.BillingData{}, err
	}
	d := pages.BillingData{Acting: s.Acting, Balance: bal, Checkouts: cos, CanTopUp: s.Acting.Workspace.Role.AddsBalance(), Presets: billing.TopUpPresets,
		Units: units, Plan: plan}
	if d.CanTopUp {
		perUSD, err := p.Prices.UnitsPerUSD()
		if err != nil {
			return pages.BillingData{}, err
		}
		d.Packs = billing.OfferedPacks(perUSD)
	}
	return d, nil
}

// Billing is the billing page; the return page of a checkout too
// (?checkout=<session> refreshes itself while the payment is pending,
// ?cancelled=<top-up> marks the top-up its payer left cancelled).
func (p *Pages) Billing(r *http.Request, s Session) (Shown, error) {
	q := r.URL.Query()
	if id := q.Get("cancelled"); id != "" {
		if err := p.cancelled(r, s, id); err != nil {
			return Shown{}, internal("cancel top-up", err)
		}
	}
	data, err := p.billingData(r.Context(), s)
	if err != nil {
		return Shown{}, internal("read billing", err)
	}
	shown := Shown{Title: "Billing", Status: http.StatusOK}
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
			shown.Refresh, shown.RefreshTo = refreshEvery, httpapi.AppPath+"/settings/billing?"+
				url.Values{"checkout": {sid}, "try": {strconv.Itoa(tries + 1)}}.Encode()
		}
	}
	shown.Page = pages.Billing(data)
	return shown, nil
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

// TopUp records a pending top-up, creates its Checkout Session and sends
// the browser there: of the API balance (the form's amount), or a pack of
// compute units (the form's pack, priced at the price file's
// compute_units_per_usd now, and kept so until it is paid). Nothing
// changes a balance until Stripe's webhook says the session is paid
// (package stripehook).
func (p *Pages) TopUp(r *http.Request, s Session) (Shown, error) {
	var amount billing.Micros
	var units billing.Units
	if raw, pack := r.PostForm.Get("pack"), r.PostForm.Has("pack"); pack {
		perUSD, err := p.Prices.UnitsPerUSD()
		if err != nil {
			return Shown{}, internal("read the price file", err)
		}
		pk, err := billing.ParsePack(raw, perUSD)
		if err != nil {
			return p.refuseTopUp(r.Context(), s, func(d *pages.BillingData) { d.PackError = "There is no such pack. " + sentence(err.Error()) })
		}
		amount, units = pk.Price, pk.Units
	} else {
		raw := r.PostForm.Get("amount")
		m, err := billing.ParseTopUpAmount(raw)
		if err != nil {
			return p.refuseTopUp(r.Context(), s, func(d *pages.BillingData) { d.Amount, d.AmountError = raw, sentence(err.Error()) })
		}
		amount = m
	}
	now, log := p.Clock.Now(), httpapi.Logger(r.Context())
	co := billing.Checkout{ID: newTopUpID(), WorkspaceID: s.workspace(), Status: billing.CheckoutPending,
		Requested: amount, Units: units, CreatedBy: s.Email, CreatedAt: now}
	if err := p.TopUps.CreateCheckout(r.Context(), co); err != nil {
		return Shown{}, internal("record top-up", err)
	}
	cs, err := p.Payments.CreateSession(r.Context(), checkoutRequest(httpapi.AppURL(p.AppURL, r), co))
	if err != nil {
		// The top-up is marked failed: the browser never saw a page to pay
		// on. Also when the request's time ran out waiting for Stripe: the
		// mark has time of its own (cleanupTimeout, inside the answer's
		// margin), or the top-up would stay pending a day.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), cleanupTimeout)
		defer cancel()
		if _, merr := p.TopUps.EndCheckout(ctx, co.WorkspaceID, co.ID, billing.CheckoutFailed, now); merr != nil {
			log.Error("mark top-up failed", "topup_id", co.ID, "error", merr.Error())
		}
		log.Error("create checkout session", "topup_id", co.ID, "error", err.Error())
		return Shown{Failed: &Failure{http.StatusBadGateway, "The payment provider could not be reached, and nothing was charged. Try again in a moment."}}, nil
	}
	if err := p.TopUps.SetCheckoutSession(r.Context(), co.WorkspaceID, co.ID, cs.ID, now); err != nil {
		// The webhook credits by the top-up's id and records the session
		// itself; this write only lets the return page find it sooner.
		log.Warn("record checkout session", "topup_id", co.ID, "error", err.Error())
	}
	log.Info("top-up started", "workspace_id", co.WorkspaceID, "topup_id", co.ID, "session_id", cs.ID, "amount_usd", amount.String(), "pack_units", int64(units))
	return Shown{Redirect: cs.URL}, nil
}

// refuseTopUp answers a top-up form that cannot be taken: the billing page
// again, 400, with the refusal beside its form (set), and nothing written.
func (p *Pages) refuseTopUp(ctx context.Context, s Session, set func(*pages.BillingData)) (Shown, error) {
	data, err := p.billingData(ctx, s)
	if err != nil {
		return Shown{}, internal("read billing", err)
	}
	set(&data)
	return Shown{Title: "Billing", Page: pages.Billing(data), Status: http.StatusBadRequest}, nil
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
// still pending, for the page's notice; again (a reload) it changes
// nothing. A top-up paid meanwhile stays paid.
func (p *Pages) cancelled(r *http.Request, s Session, id string) error {
	if !validTopUpID(id) {
		return nil // nothing of ours: the page as usual
	}
	_, err := p.TopUps.EndCheckout(r.Context(), s.workspace(), id, billing.CheckoutCancelled, p.Clock.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	httpapi.Logger(r.Context()).Info("top-up cancelled at checkout", "workspace_id", s.workspace(), "topup_id", id)
	return nil
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

// UsageChoices are the windows the usage page offers, in days.
var UsageChoices = []int{7, 30, 90}

func usageDays(r *http.Request) (int, bool) {
	v := r.URL.Query().Get("days")
	if v == "" {
		return billing.DefaultUsageDays, true
	}
	n, err := strconv.Atoi(v)
	for _, c := range UsageChoices {
		if err == nil && n == c {
			return n, true
		}
	}
	return 0, false
}

// usage is the USD usage of the window r asks for (?days=): the same
// window and sum as GET /usage (httpapi.Usage).
func (p *Pages) usage(r *http.Request, s Session) (billing.Usage, int, *Failure, error) {
	days, ok := usageDays(r)
	if !ok {
		return billing.Usage{}, 0, &Failure{http.StatusBadRequest, "Usage is shown for 7, 30 or 90 days."}, nil
	}
	from, to := billing.UsageWindow(p.Clock.Now(), days)
	charges, err := p.Ledger.Charges(r.Context(), s.workspace(), from, to)
	if err != nil {
		return billing.Usage{}, 0, nil, internal("read charges", err)
	}
	return billing.Summarize(charges, from, to), days, nil, nil
}

// Usage shows the USD usage (the figures of GET /usage) beside the
// compute units the application's jobs spent in the same window, by day
// and by person (the CU charges' ledger entries name who made the job).
func (p *Pages) Usage(r *http.Request, s Session) (Shown, error) {
	u, days, refused, err := p.usage(r, s)
	if refused != nil || err != nil {
		return Shown{Failed: refused}, err
	}
	from, to := billing.UsageWindow(p.Clock.Now(), days)
	charges, err := p.Ledger.UnitCharges(r.Context(), s.workspace(), from, to)
	if err != nil {
		return Shown{}, internal("read compute unit charges", err)
	}
	return Shown{Title: "Usage", Status: http.StatusOK, Page: pages.Usage(pages.UsageData{Days: days, Choices: UsageChoices, Usage: u,
		Units: billing.SummarizeUnits(charges, from, to), Chart: chart.Draw(u, chart.Wide), Compact: chart.Draw(u, chart.Compact)})}, nil
}

// UsageCSV is the usage table's rows as CSV: date, USD (six decimals, as
// GET /usage writes them), jobs.
func (p *Pages) UsageCSV(r *http.Request, s Session) (Shown, error) {
	u, days, refused, err := p.usage(r, s)
	if refused != nil || err != nil {
		return Shown{Failed: refused}, err
	}
	return Shown{Write: func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="usage-%s-%dd.csv"`, s.workspace(), days))
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"date", "usd", "jobs"})
		for _, d := range u.Days {
			_ = cw.Write([]string{d.Date, d.Amount.String(), strconv.Itoa(d.Jobs)})
		}
		cw.Flush()
	}}, nil
}
