// Package stripedouble is a test double of Stripe Checkout, written from
// Stripe's public API reference (Checkout Sessions: create, retrieve,
// expire; Events; webhook signatures), so that the console's whole top-up
// loop runs on one machine: `make run` serves it, and the tests use it.
//
// It keeps sessions in memory. Its checkout page has "Pay" and "Cancel":
// Pay marks the session complete and paid, POSTs a correctly signed
// checkout.session.completed to the webhook URL, then redirects to the
// session's success_url; Cancel redirects to its cancel_url. Tests send
// other events (another amount, unpaid, duplicates) with Send.
package stripedouble

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// Options configure a Double.
type Options struct {
	SecretKey     string // the API key it accepts (Bearer or Basic user)
	WebhookSecret string // signs the events it sends
	WebhookURL    string // where events go: the API's /webhooks/stripe
	// Now tells the time of sessions and signatures; nil is the wall clock.
	Now func() time.Time
	// HTTP sends the events; nil is a client with a 10 s timeout.
	HTTP *http.Client
}

// Double is the fake Stripe.
type Double struct {
	o    Options
	base string

	mu       sync.Mutex
	sessions map[string]*Session
	idem     map[string]idemEntry
	created  int
}

type idemEntry struct {
	params string // the request's body: the same key with other params is refused
	id     string
}

// Session is a Checkout Session as Stripe's API returns it (the fields the
// console uses).
type Session struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Mode              string            `json:"mode"`
	Status            string            `json:"status"`         // open, complete, expired
	PaymentStatus     string            `json:"payment_status"` // unpaid, paid
	AmountTotal       int64             `json:"amount_total"`
	AmountSubtotal    int64             `json:"amount_subtotal"`
	Currency          string            `json:"currency"`
	ClientReferenceID string            `json:"client_reference_id"`
	Metadata          map[string]string `json:"metadata"`
	SuccessURL        string            `json:"success_url"`
	CancelURL         string            `json:"cancel_url"`
	URL               string            `json:"url"`
	Created           int64             `json:"created"`
	Livemode          bool              `json:"livemode"`
	ProductName       string            `json:"-"`
}

// New returns a double; Handler serves it at base (its own address, for
// the sessions' url).
func New(o Options, base string) *Double {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	return &Double{o: o, base: strings.TrimSuffix(base, "/"), sessions: map[string]*Session{}, idem: map[string]idemEntry{}}
}

// SetWebhookURL changes where events go (a stack learns its own address
// after the double is made).
func (d *Double) SetWebhookURL(u string) { d.mu.Lock(); d.o.WebhookURL = u; d.mu.Unlock() }

// Created counts the sessions created (an idempotent replay is not one):
// tests check that a refused top-up created none.
func (d *Double) Created() int { d.mu.Lock(); defer d.mu.Unlock(); return d.created }

// Session returns a copy of a session.
func (d *Double) Session(id string) (Session, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.sessions[id]
	if !ok {
		return Session{}, false
	}
	return *s, true
}

// Sessions lists the ids of the sessions created, oldest first.
func (d *Double) Sessions() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.sessions))
	for id := range d.sessions {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(d.sessions[a].Created, d.sessions[b].Created) })
	return ids
}

// Handler serves Stripe's API paths and the checkout page.
func (d *Double) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/checkout/sessions", d.authorized(d.create))
	mux.HandleFunc("GET /v1/checkout/sessions/{id}", d.authorized(d.retrieve))
	mux.HandleFunc("POST /v1/checkout/sessions/{id}/expire", d.authorized(d.expire))
	mux.HandleFunc("GET /pay/{id}", d.page)
	mux.HandleFunc("POST /pay/{id}/pay", d.pay)
	mux.HandleFunc("POST /pay/{id}/cancel", d.cancel)
	return mux
}

// apiError answers as Stripe does: {"error": {"type", "message"}}.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"type": typ, "message": msg}})
}

func (d *Double) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if user, _, ok := r.BasicAuth(); ok {
			key = user
		}
		if key != d.o.SecretKey {
			apiError(w, http.StatusUnauthorized, "invalid_request_error", "Invalid API Key provided.")
			return
		}
		h(w, r)
	}
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (d *Double) create(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	form, err := url.ParseQuery(string(body))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "unreadable form")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.idem[key]; ok && key != "" {
		if e.params != string(body) {
			apiError(w, http.StatusBadRequest, "idempotency_error", "Keys for idempotent requests can only be used with the same parameters they were first used with.")
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, d.sessions[e.id])
		return
	}
	amount, err := strconv.ParseInt(form.Get("line_items[0][price_data][unit_amount]"), 10, 64)
	qty, _ := strconv.ParseInt(form.Get("line_items[0][quantity]"), 10, 64)
	switch {
	case form.Get("mode") != "payment":
		apiError(w, http.StatusBadRequest, "invalid_request_error", "mode must be payment (this double plays one-off payments only)")
		return
	case err != nil || amount < 50 || qty != 1:
		apiError(w, http.StatusBadRequest, "invalid_request_error", "line_items[0] needs price_data[unit_amount] of at least 50 and quantity 1")
		return
	case form.Get("success_url") == "" || form.Get("line_items[0][price_data][currency]") == "":
		apiError(w, http.StatusBadRequest, "invalid_request_error", "success_url and a currency are required")
		return
	}
	meta := map[string]string{}
	for k, v := range form {
		if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") {
			meta[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	id := newID("cs_test_")
	s := &Session{ID: id, Object: "checkout.session", Mode: "payment", Status: "open", PaymentStatus: "unpaid",
		AmountTotal: amount, AmountSubtotal: amount, Currency: form.Get("line_items[0][price_data][currency]"),
		ClientReferenceID: form.Get("client_reference_id"), Metadata: meta,
		SuccessURL: form.Get("success_url"), CancelURL: form.Get("cancel_url"), URL: d.base + "/pay/" + id,
		Created: d.o.Now().Unix(), ProductName: form.Get("line_items[0][price_data][product_data][name]")}
	d.sessions[id] = s
	d.created++
	if key != "" {
		d.idem[key] = idemEntry{params: string(body), id: id}
	}
	writeJSON(w, s)
}

func (d *Double) retrieve(w http.ResponseWriter, r *http.Request) {
	s, ok := d.Session(r.PathValue("id"))
	if !ok {
		apiError(w, http.StatusNotFound, "invalid_request_error", "No such checkout.session")
		return
	}
	writeJSON(w, s)
}

func (d *Double) expire(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d.mu.Lock()
	s, ok := d.sessions[id]
	if ok && s.Status == "open" {
		s.Status = "expired"
	}
	var snapshot Session
	if ok {
		snapshot = *s
	}
	d.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "invalid_request_error", "No such checkout.session")
		return
	}
	if err := d.Send(r.Context(), "checkout.session.expired", snapshot); err != nil {
		apiError(w, http.StatusBadGateway, "api_error", "the webhook endpoint did not take the event: "+err.Error())
		return
	}
	writeJSON(w, snapshot)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

var page = template.Must(template.New("pay").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Checkout (test double)</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;background:#f6f9fc;color:#1a1f36;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center}
main{background:#fff;border-radius:12px;box-shadow:0 4px 24px rgba(0,0,0,.08);padding:2rem;max-width:24rem;width:90%}
.amount{font-size:2.25rem;font-weight:600;margin:.25rem 0 1.5rem}
.note{color:#697386;font-size:.85rem}
button{font:inherit;border:0;border-radius:6px;padding:.7rem 1rem;width:100%;cursor:pointer;margin-top:.5rem}
.pay{background:#635bff;color:#fff;font-weight:600}.cancel{background:#e3e8ee;color:#1a1f36}
</style></head><body><main>
<p class="note">Stripe test double · nothing is charged</p>
<p>{{.ProductName}}</p>
<p class="amount">{{.Amount}} {{.Currency}}</p>
{{if eq .Status "open"}}
<form method="post" action="/pay/{{.ID}}/pay"><button class="pay" type="submit">Pay</button></form>
<form method="post" action="/pay/{{.ID}}/cancel"><button class="cancel" type="submit">Cancel</button></form>
{{else}}<p>This checkout is {{.Status}}.</p>{{end}}
</main></body></html>`))

func (d *Double) page(w http.ResponseWriter, r *http.Request) {
	s, ok := d.Session(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such checkout", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = page.Execute(w, map[string]any{"ID": s.ID, "ProductName": s.ProductName, "Status": s.Status,
		"Amount": fmt.Sprintf("%d.%02d", s.AmountTotal/100, s.AmountTotal%100), "Currency": strings.ToUpper(s.Currency)})
}

func (d *Double) pay(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d.mu.Lock()
	s, ok := d.sessions[id]
	if ok && s.Status == "open" {
		s.Status, s.PaymentStatus = "complete", "paid"
	}
	var snapshot Session
	if ok {
		snapshot = *s
	}
	d.mu.Unlock()
	if !ok || snapshot.Status != "complete" {
		http.Error(w, "this checkout is not open", http.StatusConflict)
		return
	}
	// A failed delivery is what Stripe would retry for days; here the
	// success page shows "processing" and the test sends it again.
	_ = d.Send(r.Context(), "checkout.session.completed", snapshot)
	http.Redirect(w, r, strings.ReplaceAll(snapshot.SuccessURL, "{CHECKOUT_SESSION_ID}", id), http.StatusSeeOther)
}

func (d *Double) cancel(w http.ResponseWriter, r *http.Request) {
	s, ok := d.Session(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such checkout", http.StatusNotFound)
		return
	}
	http.Redirect(w, r, s.CancelURL, http.StatusSeeOther)
}

// Event builds the event of type typ about s, as Stripe sends it.
func (d *Double) Event(typ string, s Session) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": newID("evt_"), "object": "event", "api_version": stripe.APIVersion, "created": d.o.Now().Unix(),
		"type": typ, "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil},
		"data":    map[string]any{"object": s},
	})
	return b
}

// Sign is the Stripe-Signature header of payload signed at t.
func (d *Double) Sign(payload []byte, t time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: d.o.WebhookSecret, Timestamp: t}).Header
}

// Send POSTs a signed event of type typ about s to the webhook URL; an
// answer other than 2xx is an error (Stripe would retry it).
func (d *Double) Send(ctx context.Context, typ string, s Session) error {
	payload := d.Event(typ, s)
	return d.Deliver(ctx, payload, d.Sign(payload, d.o.Now()))
}

// Deliver POSTs payload with the given Stripe-Signature header.
func (d *Double) Deliver(ctx context.Context, payload []byte, signature string) error {
	d.mu.Lock()
	url := d.o.WebhookURL
	d.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", signature)
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	resp, err := d.o.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}
