package app_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"genjobs/internal/app/stripewebhookfn"
	"genjobs/internal/awsclient"
	"genjobs/internal/billing"
	"genjobs/internal/checkout/stripedouble"
	"genjobs/internal/emulator"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/topupsdb"
	"genjobs/internal/testenv"
)

// units is ws_a's compute units and the top-up entries in units of its
// ledger.
func (p *payments) units() (billing.UnitBalance, int) {
	p.t.Helper()
	ctx := context.Background()
	u, _, err := accountsdb.New(p.store).Units(ctx, "ws_a")
	if err != nil {
		p.t.Fatal(err)
	}
	entries, err := ledgerdb.New(p.store).LedgerEntries(ctx, "ws_a")
	if err != nil {
		p.t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Kind == billing.TopUp && e.InUnits() {
			n++
		}
	}
	return u, n
}

func (p *payments) audit() {
	p.t.Helper()
	if a, err := ledgerdb.New(p.store).AuditLedger(context.Background(), "ws_a"); err != nil || len(a.Differences) > 0 {
		p.t.Errorf("ledger verify: %v, %v", a.Differences, err)
	}
}

// buyPack posts the billing page's pack form as ws_a's owner and returns
// the Checkout Session the console made, as Stripe reports it paid.
func (p *payments) buyPack(h http.Handler, o owner, double *stripedouble.Double, units string) stripedouble.Session {
	p.t.Helper()
	out := p.page(h, o, "POST", "/app/settings/billing/top-up", url.Values{"pack": {units}})
	loc := out.Headers.Get("Location")
	if out.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "/pay/cs_test_") {
		p.t.Fatalf("the pack form: %d %q; want 303 to the checkout", out.StatusCode, loc)
	}
	cs, ok := double.Session(loc[strings.LastIndex(loc, "/")+1:])
	if !ok {
		p.t.Fatalf("the double has no session behind %s", loc)
	}
	cs.Status, cs.PaymentStatus = "complete", "paid"
	return cs
}

// A pack of 5,000 compute units is bought through the console's form (a
// Checkout Session for "Compute units", 50 USD at the default 100 units
// per USD) and credited by the verified webhook alone, once: Stripe sends
// the event three times and its async twin, and every credit's first try
// loses its answer after the write (the SDK's retry meets its own write). The API
// balance never moves, and `ledger verify` is clean.
func TestAPackIsCreditedOnceThroughLostAnswersAndResentEvents(t *testing.T) {
	for _, loss := range []testenv.Loss{testenv.Reset, testenv.ServerError} {
		t.Run(loss.String(), func(t *testing.T) {
			t.Parallel()
			p := newPayments(t)
			h, _, double, o := p.console()
			cs := p.buyPack(h, o, double, "5000")
			if cs.ProductName != "Compute units" || cs.AmountTotal != 5000 || cs.Currency != "usd" || cs.Metadata["pack_units"] != "5000" || cs.ClientReferenceID != "ws_a" {
				t.Errorf("the pack's session: %q %d %s %v; want Compute units, 5000 cents in usd, pack_units 5000", cs.ProductName, cs.AmountTotal, cs.Currency, cs.Metadata)
			}
			if u, _ := p.units(); u.Available != 0 {
				t.Fatalf("units before any payment: %+v", u)
			}

			proxy := testenv.NewLossy(t, testenv.DynamoDBEndpoint(), 1, func(op string, body []byte) (string, float64) {
				if op == "TransactWriteItems" && bytes.Contains(body, []byte("PAYMENT#")) {
					return op, 1
				}
				return "", 0
			})
			proxy.Losses = []testenv.Loss{loss}
			p.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{
				"DynamoDB": proxy.URL, "SQS": p.queues.URL, "S3": p.queues.URL,
				"KMS": testenv.MotoEndpoint(), "Secrets Manager": p.secrets.URL,
				"Cognito Identity Provider": testenv.ClosedEndpoint(t),
			})
			hook := p.build(stripewebhookfn.Build)
			for _, typ := range []string{"checkout.session.completed", "checkout.session.completed", "checkout.session.completed", "checkout.session.async_payment_succeeded"} {
				if out := p.deliver(hook, typ, cs); out.StatusCode != http.StatusOK {
					t.Errorf("%s: %d %s; want 200", typ, out.StatusCode, out.Body)
				}
			}
			if n := proxy.Lost("TransactWriteItems", loss); n != 4 {
				t.Errorf("the proxy lost %d answers of the credit; want 4 (each delivery's first try)", n)
			}
			if u, entries := p.units(); u.Available != 5000 || entries != 1 {
				t.Errorf("after the deliveries: %+v, %d unit top-ups in the ledger; want 5000 available, once", u, entries)
			}
			co, err := topupsdb.New(p.store).Checkout(context.Background(), "ws_a", cs.Metadata["topup_id"])
			if err != nil || co.Status != billing.CheckoutPaid || co.Units != 5000 || co.Credited != 50*billing.USD {
				t.Errorf("the pack's record: %+v, %v; want paid, 5000 units, 50 USD", co, err)
			}
			if _, bal := p.state(); bal != funded {
				t.Errorf("the API balance moved: %s; want %s", bal, funded)
			}
			p.audit()
			page := p.page(h, o, "GET", "/app/settings/billing?checkout="+cs.ID, nil)
			if !strings.Contains(between(page.Body, `id="checkout-result">`, "<"), "5,000 compute units were added") {
				t.Errorf("the return page: %q; want it to say the units arrived", between(page.Body, `id="checkout-result">`, "<"))
			}
		})
	}
}

// An event that disagrees with the pack bought (another amount, another
// currency, another pack or none in its metadata, or a pack named on a
// top-up of the API balance) is answered 200, credits nothing, and is
// logged and counted as an anomaly; the right event then credits the pack.
func TestAPackEventThatDisagreesWithThePackBoughtCreditsNothing(t *testing.T) {
	p := newPayments(t)
	ctx := context.Background()
	pack := billing.Checkout{ID: "top_abcdefabcdefabcdefabcdef", WorkspaceID: "ws_a", Status: billing.CheckoutPending,
		Requested: 50 * billing.USD, Units: 5000, CreatedBy: "owner@a.example", CreatedAt: time.Now()}
	if err := topupsdb.New(p.store).CreateCheckout(ctx, pack); err != nil {
		t.Fatal(err)
	}
	h := p.build(stripewebhookfn.Build)
	session := func(cents int64, currency string, meta map[string]string) stripedouble.Session {
		return stripedouble.Session{ID: "cs_test_pack", Object: "checkout.session", Mode: "payment", Status: "complete",
			PaymentStatus: "paid", AmountTotal: cents, Currency: currency, ClientReferenceID: "ws_a", Metadata: meta}
	}
	odd := []struct {
		what string
		cs   stripedouble.Session
	}{
		{"40 USD for a 50 USD pack", session(4000, "usd", map[string]string{"topup_id": pack.ID, "pack_units": "5000"})},
		{"50 EUR", session(5000, "eur", map[string]string{"topup_id": pack.ID, "pack_units": "5000"})},
		{"another pack (20,000 units)", session(5000, "usd", map[string]string{"topup_id": pack.ID, "pack_units": "20000"})},
		{"no pack in its metadata", session(5000, "usd", map[string]string{"topup_id": pack.ID})},
		{"a pack that is no number", session(5000, "usd", map[string]string{"topup_id": pack.ID, "pack_units": "5e3"})},
		{"a pack named on a top-up of the API balance", stripedouble.Session{ID: "cs_test_faults", Object: "checkout.session", Mode: "payment",
			Status: "complete", PaymentStatus: "paid", AmountTotal: 1000, Currency: "usd", ClientReferenceID: "ws_a",
			Metadata: map[string]string{"topup_id": p.topUp.ID, "pack_units": "1000"}}},
	}
	for _, c := range odd {
		if out := p.deliver(h, "checkout.session.completed", c.cs); out.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s; want 200", c.what, out.StatusCode, out.Body)
		}
		if u, n := p.units(); u.Available != 0 || n != 0 {
			t.Fatalf("%s credited units: %+v", c.what, u)
		}
		if status, bal := p.state(); status != billing.CheckoutPending || bal != funded {
			t.Fatalf("%s changed the top-up or the API balance: %s, %s", c.what, status, bal)
		}
	}
	if n := len(p.metrics.lines(`"StripeAnomalies":1`)); n != len(odd) {
		t.Errorf("%d StripeAnomalies counts; want %d", n, len(odd))
	}
	if lines := p.logs.lines(`"level":"ERROR"`, "stripe webhook anomaly", `"pack_units"`); len(lines) != len(odd) {
		t.Errorf("%d anomaly lines naming the pack; want %d:\n%s", len(lines), len(odd), p.logs.lines())
	}
	right := session(5000, "usd", map[string]string{"topup_id": pack.ID, "pack_units": "5000"})
	if out := p.deliver(h, "checkout.session.completed", right); out.StatusCode != http.StatusOK {
		t.Fatalf("the right event: %d %s", out.StatusCode, out.Body)
	}
	if u, n := p.units(); u.Available != 5000 || n != 1 {
		t.Errorf("after the right event: %+v, %d entries; want 5000 units, one entry", u, n)
	}
	// Paid, then resent with another pack: nothing more.
	if out := p.deliver(h, "checkout.session.async_payment_succeeded", session(5000, "usd", map[string]string{"topup_id": pack.ID, "pack_units": "100000"})); out.StatusCode != http.StatusOK {
		t.Errorf("the paid session with another pack: %d", out.StatusCode)
	}
	if u, _ := p.units(); u.Available != 5000 {
		t.Errorf("after the resend with another pack: %+v; want 5000", u)
	}
	if _, bal := p.state(); bal != funded {
		t.Errorf("the API balance moved: %s", bal)
	}
	p.audit()
}
