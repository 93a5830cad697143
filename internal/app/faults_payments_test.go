package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"genjobs/internal/app/consolefn"
	"genjobs/internal/app/stripewebhookfn"
	"genjobs/internal/awsclient"
	"genjobs/internal/billing"
	"genjobs/internal/checkout/stripedouble"
	"genjobs/internal/clock"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/member"
	"genjobs/internal/metrics"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/sessionsdb"
	"genjobs/internal/store/topupsdb"
	"genjobs/internal/testenv"
)

// The Stripe keys of these tests: the webhook verifies with the secret's
// webhook_secret, which signs the double's events.
const (
	testStripeKey     = "sk_test_faults_key"
	testWebhookSecret = "whsec_faults_secret"
)

// faultsTopUp is the pending top-up's id, of the console's form.
const faultsTopUp = "top_0123456789abcdef01234567"

// payments is a stack with the Stripe keys in moto's Secrets Manager,
// reached through a fault proxy, a pending 10 USD top-up of ws_a, and the
// function's metrics kept for the test.
type payments struct {
	*stack
	secrets *testenv.Faults
	metrics *logBuffer
	stripe  *stripedouble.Double
	topUp   billing.Checkout
}

func newPayments(t *testing.T) *payments {
	t.Helper()
	s := newStack(t)
	ctx := context.Background()
	id := testenv.UniqueName(t, "stripe")
	value, _ := json.Marshal(map[string]string{"secret_key": testStripeKey, "webhook_secret": testWebhookSecret})
	if _, err := testenv.SecretsManager(t).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(id), SecretString: aws.String(string(value))}); err != nil {
		t.Fatal(err)
	}
	p := &payments{stack: s, secrets: testenv.NewFaults(t, testenv.MotoEndpoint()), metrics: &logBuffer{},
		stripe: stripedouble.New(stripedouble.Options{SecretKey: testStripeKey, WebhookSecret: testWebhookSecret}, "http://127.0.0.1:1")}
	s.d.Console.StripeSecretID = id
	s.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{
		"DynamoDB": s.table.URL, "SQS": s.queues.URL, "S3": s.queues.URL,
		"KMS": testenv.MotoEndpoint(), "Secrets Manager": p.secrets.URL,
		"Cognito Identity Provider": testenv.ClosedEndpoint(t), // the console's sessions here need none
	})
	s.d.Metrics = metrics.New(p.metrics, "stripewebhook", clock.System{})
	p.topUp = billing.Checkout{ID: faultsTopUp, WorkspaceID: "ws_a", Status: billing.CheckoutPending,
		Requested: 10 * billing.USD, CreatedBy: "owner@a.example", CreatedAt: time.Now()}
	if err := topupsdb.New(s.store).CreateCheckout(ctx, p.topUp); err != nil {
		t.Fatal(err)
	}
	return p
}

// session is the top-up's Checkout Session as Stripe reports it.
func (p *payments) session(amountCents int64) stripedouble.Session {
	return stripedouble.Session{ID: "cs_test_faults", Object: "checkout.session", Mode: "payment", Status: "complete",
		PaymentStatus: "paid", AmountTotal: amountCents, Currency: "usd", ClientReferenceID: "ws_a",
		Metadata: map[string]string{"topup_id": p.topUp.ID}}
}

// deliver posts a signed event of typ about cs to h through the Lambda
// adapter, as Stripe would.
func (p *payments) deliver(h http.Handler, typ string, cs stripedouble.Session) answer {
	p.t.Helper()
	payload := p.stripe.Event(typ, cs)
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
	defer cancel()
	req := httptest.NewRequest("POST", "https://api.test/webhooks/stripe", strings.NewReader(string(payload))).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", p.stripe.Sign(payload, time.Now()))
	rec := lambdatest.Serve(h, req)
	return answer{rec.Code, rec.Header(), rec.Body.String()}
}

// state is the top-up's status and the workspace's available balance.
func (p *payments) state() (billing.CheckoutStatus, billing.Micros) {
	p.t.Helper()
	ctx := context.Background()
	co, err := topupsdb.New(p.store).Checkout(ctx, "ws_a", p.topUp.ID)
	if err != nil {
		p.t.Fatal(err)
	}
	bal, err := accountsdb.New(p.store).Balance(ctx, "ws_a")
	if err != nil {
		p.t.Fatal(err)
	}
	return co.Status, bal.Available
}

// A Stripe event that disagrees with its top-up is answered 200 (Stripe
// would retry anything else for days), credits nothing, and is logged at
// ERROR with the request id, never a key, and counted by the metric the
// StripeAnomalies alarm watches.
func TestAStripeAnomalyIsAnswered200LoggedAndCounted(t *testing.T) {
	p := newPayments(t)
	h := p.build(stripewebhookfn.Build)
	for _, cents := range []int64{1_234_500, 1 << 62} {
		out := p.deliver(h, "checkout.session.completed", p.session(cents))
		if out.StatusCode != 200 || !strings.Contains(out.Body, `"received":true`) {
			t.Errorf("amount_total %d: %d %s; want 200", cents, out.StatusCode, out.Body)
		}
		if lines := p.logs.lines(`"level":"ERROR"`, "stripe webhook anomaly", `"request_id":"`+out.RequestID()+`"`); len(lines) != 1 {
			t.Errorf("amount_total %d: want one ERROR line with the request id; got\n%s", cents, p.logs.lines())
		}
	}
	if n := len(p.metrics.lines(`"StripeAnomalies":1`, `"Function":"stripewebhook"`, `"Namespace":"GenJobs"`)); n != 2 {
		t.Errorf("%d StripeAnomalies counts; want 2:\n%s", n, p.metrics.lines())
	}
	if status, bal := p.state(); status != billing.CheckoutPending || bal != funded {
		t.Errorf("after the anomalies: %s, %s available; want pending and %s", status, bal, funded)
	}
	for _, secret := range []string{testStripeKey, testWebhookSecret} {
		if lines := p.logs.lines(secret); len(lines) > 0 {
			t.Errorf("a log line holds a Stripe key: %s", lines)
		}
	}
	// The right amount is credited, and counts no anomaly.
	if out := p.deliver(h, "checkout.session.completed", p.session(1000)); out.StatusCode != 200 {
		t.Fatalf("the paid event: %d %s", out.StatusCode, out.Body)
	}
	if status, bal := p.state(); status != billing.CheckoutPaid || bal != funded+10*billing.USD {
		t.Errorf("after the paid event: %s, %s available; want paid and %s", status, bal, funded+10*billing.USD)
	}
	if n := len(p.metrics.lines(`"StripeAnomalies"`)); n != 2 {
		t.Errorf("%d StripeAnomalies counts after a good event; want still 2", n)
	}
}

// When the Stripe keys' secret or the table fails, the webhook answers 503
// with Retry-After, so that Stripe sends the event again, and writes
// nothing; the same event once the dependency is back is credited once.
func TestTheStripeWebhookAnswers503WhenItsDependencyFails(t *testing.T) {
	cases := []struct {
		name, typ string
		secrets   bool // the fault is on Secrets Manager, not the table
		op, where string
		fault     testenv.Fault
		after     billing.CheckoutStatus
	}{
		{"the Stripe keys", "checkout.session.completed", true, "GetSecretValue", "", testenv.Unavailable, billing.CheckoutPaid},
		{"the top-up's read", "checkout.session.completed", false, "GetItem", "TOPUP#", testenv.Throttle, billing.CheckoutPaid},
		{"the credit's transaction", "checkout.session.completed", false, "TransactWriteItems", "", testenv.Unavailable, billing.CheckoutPaid},
		{"the credit's transaction, frozen", "checkout.session.async_payment_succeeded", false, "TransactWriteItems", "", testenv.Freeze, billing.CheckoutPaid},
		{"an expiry's write", "checkout.session.expired", false, "UpdateItem", "TOPUP#", testenv.Drop, billing.CheckoutExpired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newPayments(t)
			h := p.build(stripewebhookfn.Build)
			faults := p.table
			if c.secrets {
				faults = p.secrets
			}
			faults.SetIf(c.op, c.where, c.fault)
			out := p.deliver(h, c.typ, p.session(1000))
			want503(t, "during the outage", out)
			if faults.Failed(c.op) == 0 {
				t.Errorf("no %s call was failed: the 503 came from elsewhere", c.op)
			}
			if status, bal := p.state(); status != billing.CheckoutPending || bal != funded {
				t.Errorf("during the outage: %s, %s available; want nothing written (pending, %s)", status, bal, funded)
			}
			faults.Clear()
			for range 2 { // Stripe's retry, and a duplicate of it
				if out := p.deliver(h, c.typ, p.session(1000)); out.StatusCode != 200 {
					t.Errorf("after the outage: %d %s; want 200", out.StatusCode, out.Body)
				}
			}
			wantBal := funded
			if c.after == billing.CheckoutPaid {
				wantBal += 10 * billing.USD
			}
			if status, bal := p.state(); status != c.after || bal != wantBal {
				t.Errorf("after the outage: %s, %s available; want %s and %s", status, bal, c.after, wantBal)
			}
			if a, err := ledgerdb.New(p.store).AuditLedger(context.Background(), "ws_a"); err != nil || len(a.Differences) > 0 {
				t.Errorf("ledger audit: %v, %v", a.Differences, err)
			}
		})
	}
}

// owner is a console session of ws_a's owner: its cookie and CSRF token.
type owner struct{ cookie, csrf string }

// consoleStack builds the console as Lambda does, reaching Stripe (the
// double, behind a fault proxy) and the Stripe keys through their fault
// proxies, with an owner of ws_a signed in.
func (p *payments) console() (http.Handler, *testenv.Faults, *stripedouble.Double, owner) {
	p.t.Helper()
	var double *stripedouble.Double
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { double.Handler().ServeHTTP(w, r) }))
	p.t.Cleanup(srv.Close)
	double = stripedouble.New(stripedouble.Options{SecretKey: testStripeKey, WebhookSecret: testWebhookSecret,
		WebhookURL: testenv.ClosedEndpoint(p.t)}, srv.URL)
	stripe := testenv.NewFaults(p.t, srv.URL)
	p.d.Console.StripeAPIBase = stripe.URL
	p.d.Console.UserPoolID, p.d.Console.ClientID = "us-east-1_faults", "faults-client"
	ctx, now := context.Background(), time.Now()
	if err := membersdb.New(p.store).AddMember(ctx, member.Membership{WorkspaceID: "ws_a", WorkspaceName: "A", UserID: "user-owner",
		Email: "owner@a.example", Role: member.Owner, AddedAt: now}); err != nil {
		p.t.Fatal(err)
	}
	o := owner{cookie: "faults-session-cookie-value", csrf: "faults-csrf-token"}
	if err := sessionsdb.New(p.store).CreateSession(ctx, member.Session{Hash: member.HashSecret(o.cookie), UserID: "user-owner", Email: "owner@a.example",
		WorkspaceID: "ws_a", CSRF: o.csrf, CreatedAt: now, SeenAt: now, CheckedAt: now}); err != nil {
		p.t.Fatal(err)
	}
	return p.build(consolefn.Build), stripe, double, o
}

// page requests a console page as the owner's browser does, through the
// Lambda adapter under an invocation deadline of lambdaTimeout.
func (p *payments) page(h http.Handler, o owner, method, path string, form url.Values) answer {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
	defer cancel()
	var body string
	if form != nil {
		form.Set("csrf", o.csrf)
		form.Set("workspace", "ws_a")
		body = form.Encode()
	}
	req := httptest.NewRequest(method, "https://api.test"+path, strings.NewReader(body)).WithContext(ctx)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://api.test")
	}
	req.AddCookie(&http.Cookie{Name: "console_session", Value: o.cookie})
	rec := lambdatest.Serve(h, req)
	return answer{rec.Code, rec.Header(), rec.Body.String()}
}

// topUps are ws_a's top-ups by checkout, newest first.
func (p *payments) topUps() []billing.Checkout {
	p.t.Helper()
	cos, err := topupsdb.New(p.store).Checkouts(context.Background(), "ws_a")
	if err != nil {
		p.t.Fatal(err)
	}
	return cos
}

// When Stripe or the Stripe keys' secret fails during a top-up (refusing,
// or never answering until the request's time runs out), the owner gets a
// page saying nothing was charged, and the top-up is marked failed, never
// left pending: the mark has time of its own after the request's ends.
func TestATopUpWhoseCheckoutCannotBeMadeIsMarkedFailed(t *testing.T) {
	cases := []struct {
		name    string
		secrets bool
		op      string
		fault   testenv.Fault
	}{
		// POST /v1/checkout/sessions, as the fault proxy names it.
		{"Stripe unavailable", false, "PostObject", testenv.Unavailable},
		{"Stripe unreachable", false, "PostObject", testenv.Drop},
		{"Stripe frozen past the request's deadline", false, "PostObject", testenv.Freeze},
		{"the Stripe keys unavailable", true, "GetSecretValue", testenv.Unavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newPayments(t)
			h, stripe, _, o := p.console()
			faults := stripe
			if c.secrets {
				faults = p.secrets
			}
			faults.Set(c.op, c.fault)
			out := p.page(h, o, "POST", "/app/settings/billing/top-up", url.Values{"amount": {"25"}})
			if out.StatusCode != http.StatusBadGateway || !strings.Contains(out.Body, "nothing was charged") {
				t.Errorf("%d, want 502 saying nothing was charged:\n%.600s", out.StatusCode, out.Body)
			}
			if faults.Failed(c.op) == 0 {
				t.Errorf("no call was failed: the page came from elsewhere")
			}
			cos := p.topUps()
			if len(cos) != 2 || cos[0].ID == p.topUp.ID || cos[0].Status != billing.CheckoutFailed {
				t.Errorf("top-ups %+v; want a new one, failed", cos)
			}
			if _, bal := p.state(); bal != funded {
				t.Errorf("balance %s; want %s", bal, funded)
			}
			faults.Clear()
			if out := p.page(h, o, "POST", "/app/settings/billing/top-up", url.Values{"amount": {"25"}}); out.StatusCode != http.StatusSeeOther {
				t.Errorf("after the outage: %d; want 303 to the checkout", out.StatusCode)
			}
		})
	}
}

// When the table fails, the billing page and the top-up form answer a 503
// page with Retry-After that says nothing was done; a top-up whose record
// could not be written creates no Checkout Session.
func TestTheBillingPagesAnswer503WhenTheTableFails(t *testing.T) {
	for _, c := range []struct {
		name, method, path, op, where string
	}{
		{"the billing page's top-ups", "GET", "/app/settings/billing", "Query", "TOPUP#"},
		{"the top-up's record", "POST", "/app/settings/billing/top-up", "TransactWriteItems", "TOPUP#"},
		{"the cancel return's write", "GET", "/app/settings/billing?cancelled=" + faultsTopUp, "UpdateItem", "TOPUP#"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newPayments(t)
			h, _, double, o := p.console()
			path := c.path
			var form url.Values
			if c.method == "POST" {
				form = url.Values{"amount": {"25"}}
			}
			p.table.SetIf(c.op, c.where, testenv.Unavailable)
			out := p.page(h, o, c.method, path, form)
			if out.StatusCode != http.StatusServiceUnavailable || out.Headers.Get("Retry-After") == "" || !strings.Contains(out.Body, "was not done") {
				t.Errorf("%d, Retry-After %q; want a 503 page with Retry-After:\n%.600s", out.StatusCode, out.Headers.Get("Retry-After"), out.Body)
			}
			if p.table.Failed(c.op) == 0 {
				t.Errorf("no %s call was failed", c.op)
			}
			if double.Created() != 0 {
				t.Errorf("%d Checkout Sessions created; want none", double.Created())
			}
			for _, co := range p.topUps() {
				if co.ID != p.topUp.ID && co.Status == billing.CheckoutPending {
					t.Errorf("a top-up left pending: %+v", co)
				}
				if co.Status == billing.CheckoutCancelled {
					t.Errorf("a top-up cancelled during the outage: %+v", co)
				}
			}
		})
	}
}
