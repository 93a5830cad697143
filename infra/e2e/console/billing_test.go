package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/billing"
	"genjobs/internal/checkout/stripedouble"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/topupsdb"
)

// startTopUp posts the top-up form and follows the browser to the Stripe
// double's checkout page: the session it made.
func startTopUp(t *testing.T, s *devstacktest.Stack, b *browser, amount string) stripedouble.Session {
	t.Helper()
	p := b.post("/app/settings/billing/top-up", b.form(devstack.DemoWorkspace, "amount", amount))
	if p.status != http.StatusSeeOther || !strings.Contains(p.location, "/pay/cs_test_") {
		t.Fatalf("top-up of %s: %d %q", amount, p.status, p.location)
	}
	cs, ok := s.Stripe.Session(p.location[strings.LastIndex(p.location, "/")+1:])
	if !ok {
		t.Fatalf("the double has no session behind %s", p.location)
	}
	return cs
}

func balance(t *testing.T, s *devstacktest.Stack) billing.Micros {
	t.Helper()
	bal, err := accountsdb.New(s.Store).Balance(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	return bal.Available
}

func TestATopUpIsCreditedOnlyByItsVerifiedWebhook(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	before := balance(t, s)
	cs := startTopUp(t, s, b, "25")
	if cs.AmountTotal != 2500 || cs.Currency != "usd" || cs.ClientReferenceID != devstack.DemoWorkspace || cs.Metadata["topup_id"] == "" ||
		!strings.HasSuffix(cs.SuccessURL, "/app/settings/billing?checkout={CHECKOUT_SESSION_ID}") || !strings.HasSuffix(cs.CancelURL, "/app/settings/billing?cancelled="+cs.Metadata["topup_id"]) {
		t.Errorf("checkout session: %+v", cs)
	}
	if got := balance(t, s); got != before {
		t.Fatalf("the balance moved before any payment: %s -> %s", before, got)
	}
	pending := b.get("/app/settings/billing?checkout=" + cs.ID)
	if !strings.Contains(pending.body, "Processing your payment") || !strings.Contains(pending.body, `http-equiv="refresh"`) {
		t.Error("the return page before the webhook does not say processing")
	}

	paid := cs
	paid.Status, paid.PaymentStatus = "complete", "paid"
	payload := s.Stripe.Event("checkout.session.completed", paid)
	if err := s.Stripe.Deliver(ctx, payload, "t=1,v1=deadbeef"); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a bad signature: %v, want 400", err)
	}
	stale := s.Stripe.Sign(payload, time.Now().Add(-301*time.Second))
	if err := s.Stripe.Deliver(ctx, payload, stale); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a signature 301 s old: %v, want 400", err)
	}
	if err := s.Stripe.Deliver(ctx, payload, ""); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("no signature: %v, want 400", err)
	}
	unpaid := cs
	unpaid.Status = "complete"
	if err := s.Stripe.Send(ctx, "checkout.session.completed", unpaid); err != nil {
		t.Errorf("completed but unpaid: %v, want 200", err)
	}
	if got := balance(t, s); got != before {
		t.Fatalf("refused or unpaid events moved the balance: %s -> %s", before, got)
	}

	// The same event delivered twice, and concurrently: credited once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Stripe.Deliver(ctx, payload, s.Stripe.Sign(payload, time.Now())); err != nil {
				t.Errorf("delivery: %v", err)
			}
		}()
	}
	wg.Wait()
	if err := s.Stripe.Send(ctx, "checkout.session.async_payment_succeeded", paid); err != nil {
		t.Error(err)
	}
	if got := balance(t, s); got != before+25*billing.USD {
		t.Errorf("after the deliveries: %s, want %s", got, before+25*billing.USD)
	}
	done := b.get("/app/settings/billing?checkout=" + cs.ID)
	if !strings.Contains(done.body, "Payment received: 25.00 USD") || strings.Contains(done.body, `http-equiv="refresh"`) {
		t.Error("the return page after the webhook does not say the payment was received")
	}
	audit(t, s)
}

// Only the amount and currency the top-up recorded are credited: a session
// whose event says another total (a 10 USD top-up whose event said 12,345
// USD, or a total whose micro-USD would overflow), another currency, or,
// once paid, the same session again with another amount, is answered 200
// (Stripe would retry anything else for days) and credits nothing.
func TestOnlyTheAmountAndCurrencyAskedAreCredited(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	before := balance(t, s)
	cs := startTopUp(t, s, b, "10")
	cs.Status, cs.PaymentStatus = "complete", "paid"
	for _, c := range []struct {
		what     string
		amount   int64
		currency string
	}{
		{"12,345 USD for a 10 USD top-up", 1_234_500, "usd"},
		{"43.21 USD (less than asked)", 4321, "usd"},
		{"a total whose micro-USD overflows int64", 1 << 62, "usd"},
		{"a negative total", -1000, "usd"},
		{"10 EUR", 1000, "eur"},
	} {
		odd := cs
		odd.AmountTotal, odd.Currency = c.amount, c.currency
		if err := s.Stripe.Send(ctx, "checkout.session.completed", odd); err != nil {
			t.Errorf("%s: %v, want 200", c.what, err)
		}
		if got := balance(t, s); got != before {
			t.Fatalf("%s moved the balance: %s -> %s", c.what, before, got)
		}
	}
	if err := s.Stripe.Send(ctx, "checkout.session.completed", cs); err != nil {
		t.Fatal(err)
	}
	if got := balance(t, s); got != before+10*billing.USD {
		t.Fatalf("the right event credited %s, want 10.00", got-before)
	}
	// Resent for the same session with another amount: 200, nothing more.
	again := cs
	again.AmountTotal = 1500
	if err := s.Stripe.Send(ctx, "checkout.session.async_payment_succeeded", again); err != nil {
		t.Errorf("the paid session again with another amount: %v, want 200", err)
	}
	if got := balance(t, s); got != before+10*billing.USD {
		t.Errorf("after the resend: credited %s, want 10.00", got-before)
	}
	audit(t, s)
}

// A signature timestamp more than 5 minutes ahead is refused as a stale
// one is: 400, nothing credited; one within the tolerance is taken.
func TestASignatureFromTheFutureIsRefused(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	before := balance(t, s)
	cs := startTopUp(t, s, b, "25")
	cs.Status, cs.PaymentStatus = "complete", "paid"
	payload := s.Stripe.Event("checkout.session.completed", cs)
	ahead := s.Stripe.Sign(payload, time.Now().Add(6*time.Minute))
	if err := s.Stripe.Deliver(ctx, payload, ahead); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a signature 6 minutes ahead: %v, want 400", err)
	}
	if got := balance(t, s); got != before {
		t.Fatalf("a signature from the future moved the balance: %s -> %s", before, got)
	}
	if err := s.Stripe.Deliver(ctx, payload, s.Stripe.Sign(payload, time.Now().Add(4*time.Minute))); err != nil {
		t.Errorf("a signature 4 minutes ahead (within the tolerance): %v, want 200", err)
	}
	if got := balance(t, s); got != before+25*billing.USD {
		t.Errorf("credited %s, want 25.00", got-before)
	}
}

func TestASessionThisDeploymentDidNotCreateCreditsNothing(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	before := balance(t, s)
	foreign := stripedouble.Session{ID: "cs_test_foreign", Object: "checkout.session", Status: "complete", PaymentStatus: "paid",
		AmountTotal: 100000, Currency: "usd", ClientReferenceID: devstack.DemoWorkspace, Metadata: map[string]string{"topup_id": "top_unknown"}}
	if err := s.Stripe.Send(ctx, "checkout.session.completed", foreign); err != nil {
		t.Errorf("a foreign session: %v, want 200", err)
	}
	foreign.Metadata = nil
	if err := s.Stripe.Send(ctx, "checkout.session.completed", foreign); err != nil {
		t.Errorf("a session without metadata: %v, want 200", err)
	}
	// A real top-up's id with another session's id.
	cs := startTopUp(t, s, b, "10")
	cs.ID, cs.Status, cs.PaymentStatus = "cs_test_other", "complete", "paid"
	if err := s.Stripe.Send(ctx, "checkout.session.completed", cs); err != nil {
		t.Errorf("another session of a known top-up: %v, want 200", err)
	}
	if err := s.Stripe.Send(ctx, "customer.created", foreign); err != nil {
		t.Errorf("an event of another type: %v, want 200", err)
	}
	if got := balance(t, s); got != before {
		t.Errorf("the balance moved: %s -> %s", before, got)
	}
}

func TestFailedAndExpiredCheckoutsAreMarked(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	failed := startTopUp(t, s, b, "10")
	if err := s.Stripe.Send(ctx, "checkout.session.async_payment_failed", failed); err != nil {
		t.Fatal(err)
	}
	expired := startTopUp(t, s, b, "100")
	if err := s.Stripe.Send(ctx, "checkout.session.expired", expired); err != nil {
		t.Fatal(err)
	}
	cos, err := topupsdb.New(s.Store).Checkouts(ctx, devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]billing.CheckoutStatus{}
	for _, c := range cos {
		got[c.SessionID] = c.Status
	}
	if got[failed.ID] != billing.CheckoutFailed || got[expired.ID] != billing.CheckoutExpired {
		t.Errorf("statuses: %v", got)
	}
	page := b.get("/app/settings/billing").body
	if !strings.Contains(page, `pill failed`) || !strings.Contains(page, `pill expired`) {
		t.Error("the billing page does not show the failed and expired top-ups")
	}
}

// Coming back by the checkout's Cancel (its cancel_url names the top-up)
// says nothing was charged and marks the top-up cancelled, once however
// often the page is loaded; another workspace's top-up, or an id that is
// none, changes nothing. A payment that arrives after all is credited.
func TestReturningByCancelSaysNothingWasChargedAndCancelsTheTopUp(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	before := balance(t, s)
	cs := startTopUp(t, s, b, "10")
	id := cs.Metadata["topup_id"]
	back := strings.TrimPrefix(cs.CancelURL, s.URL)
	if back != "/app/settings/billing?cancelled="+id {
		t.Fatalf("cancel_url %q; want the billing page naming top-up %s", cs.CancelURL, id)
	}
	status := func(ws, id string) billing.CheckoutStatus {
		t.Helper()
		co, err := topupsdb.New(s.Store).Checkout(ctx, ws, id)
		if err != nil {
			t.Fatal(err)
		}
		return co.Status
	}
	for range 2 { // a reload changes nothing more
		p := b.get(back)
		if p.status != http.StatusOK || !strings.Contains(between(p.body, `id="checkout-result">`, "<"), "nothing was charged") {
			t.Errorf("the cancel return: %d %q; want 200 saying nothing was charged", p.status, between(p.body, `id="checkout-result">`, "<"))
		}
		if got := status(devstack.DemoWorkspace, id); got != billing.CheckoutCancelled {
			t.Errorf("the top-up after the cancel return: %s; want cancelled", got)
		}
	}
	if got := balance(t, s); got != before {
		t.Errorf("the balance moved: %s -> %s", before, got)
	}

	devstacktest.Workspace(t, s.Store, "ws_other", 0, 5, 5)
	other := billing.Checkout{ID: "top_0123456789abcdef01234567", WorkspaceID: "ws_other", Status: billing.CheckoutPending,
		Requested: 10 * billing.USD, CreatedBy: "x@example.com", CreatedAt: time.Now()}
	if err := topupsdb.New(s.Store).CreateCheckout(ctx, other); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{other.ID, "top_" + strings.Repeat("f", 2000), "not-a-top-up"} {
		p := b.get("/app/settings/billing?cancelled=" + q)
		if p.status != http.StatusOK || strings.Contains(p.body, `id="checkout-result"`) {
			t.Errorf("?cancelled=%.40s: %d, notice %q; want the page without one", q, p.status, between(p.body, `id="checkout-result">`, "<"))
		}
	}
	if got := status("ws_other", other.ID); got != billing.CheckoutPending {
		t.Errorf("another workspace's top-up: %s; want it still pending", got)
	}

	// Paid in another tab after all: the money arrived, so it is credited.
	cs.Status, cs.PaymentStatus = "complete", "paid"
	if err := s.Stripe.Send(ctx, "checkout.session.completed", cs); err != nil {
		t.Fatal(err)
	}
	if got := status(devstack.DemoWorkspace, id); got != billing.CheckoutPaid || balance(t, s) != before+10*billing.USD {
		t.Errorf("paid after cancelling: %s, balance %s; want paid and 10.00 more", got, balance(t, s))
	}
	audit(t, s)
}

func TestCustomAmountsOutsideTheRulesAreRefusedBesideTheField(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	for amount, want := range map[string]string{
		"4.99":     "smallest top-up is 5 USD",
		"10000.01": "largest top-up is 10,000 USD",
		"12.345":   "at most two decimals",
		"1e3":      "such as 25 or 12.50",
		"":         "Enter an amount",
		"-5":       "must be positive",
	} {
		p := b.post("/app/settings/billing/top-up", b.form(devstack.DemoWorkspace, "amount", amount))
		if p.status != http.StatusBadRequest || !strings.Contains(between(p.body, `id="amount-error">`, "<"), want) {
			t.Errorf("amount %q: %d %q, want 400 saying %q", amount, p.status, between(p.body, `id="amount-error">`, "<"), want)
		}
	}
	cos, _ := topupsdb.New(s.Store).Checkouts(context.Background(), devstack.DemoWorkspace)
	if len(cos) != 0 || s.Stripe.Created() != 0 {
		t.Errorf("refused amounts left %d top-ups and %d checkout sessions", len(cos), s.Stripe.Created())
	}
	for _, ok := range []string{"5", "10000", "12.5", "12.50"} {
		startTopUp(t, s, b, ok)
	}
}

// TestTheLedgerStaysExactUnderRandomTopUpsDeliveriesAndJobs mixes top-ups
// whose webhooks come once, twice, concurrently or never (lost) with jobs
// that complete or are cancelled, then audits the ledger as `ledger verify`
// does, and checks that exactly the delivered top-ups were credited.
func TestTheLedgerStaysExactUnderRandomTopUpsDeliveriesAndJobs(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(26, 14))
	want := topUps(t, s)
	var jobs []string
	for i := range 12 {
		cents := 500 + rng.Int64N(20000)
		cs := startTopUp(t, s, b, fmt.Sprintf("%d.%02d", cents/100, cents%100))
		cs.Status, cs.PaymentStatus = "complete", "paid"
		deliveries := rng.IntN(4) // 0: lost (Stripe would retry later; not here)
		var wg sync.WaitGroup
		for range deliveries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.Stripe.Send(ctx, "checkout.session.completed", cs); err != nil {
					t.Errorf("delivery: %v", err)
				}
			}()
		}
		wg.Wait()
		if deliveries > 0 {
			want += billing.Micros(cents) * billing.Cent
		}
		if i%3 == 0 {
			id := createJob(t, s)
			if rng.IntN(2) == 0 {
				cancelJob(t, s, id)
			}
			jobs = append(jobs, id)
		}
	}
	for _, id := range jobs {
		waitEnded(t, s, id)
	}
	if got := topUps(t, s); got != want {
		t.Errorf("top-ups in the ledger: %s, want %s", got, want)
	}
	audit(t, s)
}

// topUps adds up the demo workspace's top-up entries.
func topUps(t *testing.T, s *devstacktest.Stack) billing.Micros {
	t.Helper()
	entries, err := ledgerdb.New(s.Store).LedgerEntries(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	var sum billing.Micros
	for _, e := range entries {
		if e.Kind == billing.TopUp {
			sum += e.Amount
		}
	}
	return sum
}

// audit is `ledger verify --workspace ws_demo`: no difference allowed.
func audit(t *testing.T, s *devstacktest.Stack) {
	t.Helper()
	a, err := ledgerdb.New(s.Store).AuditLedger(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Differences) > 0 {
		t.Errorf("the ledger audit found: %v", a.Differences)
	}
}

func createJob(t *testing.T, s *devstacktest.Stack) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/generate/3d/vendor-g/model-g-3.1-rapid", strings.NewReader(`{"prompt":"a teapot"}`))
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		ID string `json:"job_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusOK || body.ID == "" {
		t.Fatalf("create a job: %d", resp.StatusCode)
	}
	return body.ID
}

func cancelJob(t *testing.T, s *devstacktest.Stack, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.URL+"/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// waitEnded waits, at most a minute, for a job to end.
func waitEnded(t *testing.T, s *devstacktest.Stack, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/jobs/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Status string `json:"status"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		switch body.Status {
		case "completed", "failed", "cancelled":
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %s did not end within a minute", id)
}
