package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"genjobs/internal/app/stripewebhookfn"
	"genjobs/internal/awsclient"
	"genjobs/internal/billing"
	"genjobs/internal/checkout/stripedouble"
	"genjobs/internal/clock"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/metrics"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/consoledb"
	"genjobs/internal/testenv"
)

// The Stripe keys of these tests: the webhook verifies with the secret's
// webhook_secret, which signs the double's events.
const (
	testStripeKey     = "sk_test_faults_key"
	testWebhookSecret = "whsec_faults_secret"
)

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
	})
	s.d.Metrics = metrics.New(p.metrics, "stripewebhook", clock.System{})
	p.topUp = billing.Checkout{ID: "top_faults", WorkspaceID: "ws_a", Status: billing.CheckoutPending,
		Requested: 10 * billing.USD, CreatedBy: "owner@a.example", CreatedAt: time.Now()}
	if err := consoledb.New(s.store).CreateCheckout(ctx, p.topUp); err != nil {
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
	co, err := consoledb.New(p.store).Checkout(ctx, "ws_a", p.topUp.ID)
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
			if a, err := accountsdb.New(p.store).AuditLedger(context.Background(), "ws_a"); err != nil || len(a.Differences) > 0 {
				t.Errorf("ledger audit: %v, %v", a.Differences, err)
			}
		})
	}
}
