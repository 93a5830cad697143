package sweeper_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/emulator"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/topupsdb"
	"genjobs/internal/testenv"
)

// topUp records a pending top-up of ws made at created.
func (e *env) topUp(ws, id string, created time.Time) {
	e.t.Helper()
	err := topupsdb.New(e.store).CreateCheckout(e.ctx, billing.Checkout{ID: id, WorkspaceID: ws, Status: billing.CheckoutPending,
		Requested: 10 * billing.USD, CreatedBy: "owner@example.com", CreatedAt: created})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) topUpStatus(ws, id string) billing.CheckoutStatus {
	e.t.Helper()
	co, err := topupsdb.New(e.store).Checkout(e.ctx, ws, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return co.Status
}

// A top-up still pending after Checkout's 24-hour session life (its
// webhook lost, or its session never made) is marked expired by the
// sweeper, once; a younger one, and one paid, failed or cancelled, is left
// as it is. A payment that comes after all is still credited.
func TestTheSweeperExpiresTopUpsPendingPastTheirSessionsLife(t *testing.T) {
	e := newEnv(t)
	e.sweep.TopUps = topupsdb.New(e.store)
	e.workspace("ws_a", 5)
	e.workspace("ws_b", 5)
	db := topupsdb.New(e.store)
	e.topUp("ws_a", "top_old", t0.Add(-25*time.Hour))
	e.topUp("ws_b", "top_old_b", t0.Add(-48*time.Hour))
	e.topUp("ws_a", "top_young", t0.Add(-23*time.Hour))
	e.topUp("ws_a", "top_paid", t0.Add(-30*time.Hour))
	if _, err := db.CreditCheckout(e.ctx, "ws_a", "top_paid", "cs_paid", 10*billing.USD, 0, t0.Add(-29*time.Hour)); err != nil {
		t.Fatal(err)
	}
	e.topUp("ws_a", "top_cancelled", t0.Add(-30*time.Hour))
	if _, err := db.EndCheckout(e.ctx, "ws_a", "top_cancelled", billing.CheckoutCancelled, t0.Add(-29*time.Hour)); err != nil {
		t.Fatal(err)
	}

	r, err := e.sweep.Sweep(e.ctx)
	if err != nil || r.TopUpsExpired != 2 {
		t.Fatalf("sweep: %+v, %v; want 2 top-ups expired", r, err)
	}
	for id, want := range map[string]billing.CheckoutStatus{
		"top_old": billing.CheckoutExpired, "top_young": billing.CheckoutPending,
		"top_paid": billing.CheckoutPaid, "top_cancelled": billing.CheckoutCancelled,
	} {
		if got := e.topUpStatus("ws_a", id); got != want {
			t.Errorf("%s: %s; want %s", id, got, want)
		}
	}
	if got := e.topUpStatus("ws_b", "top_old_b"); got != billing.CheckoutExpired {
		t.Errorf("another workspace's old top-up: %s; want expired", got)
	}
	// Expired top-ups leave the index: the next sweep finds nothing.
	if r, err := e.sweep.Sweep(e.ctx); err != nil || r.TopUpsExpired != 0 {
		t.Errorf("the next sweep: %+v, %v; want nothing expired", r, err)
	}
	// An hour on, the young one is past its life too.
	e.clock.T = t0.Add(time.Hour + time.Second)
	if r, err := e.sweep.Sweep(e.ctx); err != nil || r.TopUpsExpired != 1 || e.topUpStatus("ws_a", "top_young") != billing.CheckoutExpired {
		t.Errorf("an hour later: %+v, %v, top_young %s; want it expired", r, err, e.topUpStatus("ws_a", "top_young"))
	}
	// Stripe's late webhook for an expired top-up: the money arrived.
	if credited, err := db.CreditCheckout(e.ctx, "ws_a", "top_old", "cs_old", 10*billing.USD, 0, t0); err != nil || !credited {
		t.Errorf("a late payment of an expired top-up: %v, %v; want it credited", credited, err)
	}
}

// The expiry whose answer was lost is retried by the SDK and meets its own
// write: it is recognised as this sweep's, counted once, and no error.
func TestAnExpiryWhoseAnswerWasLostIsRecognised(t *testing.T) {
	for _, loss := range []testenv.Loss{testenv.Reset, testenv.ServerError} {
		t.Run(loss.String(), func(t *testing.T) {
			e := newEnv(t)
			e.workspace("ws_a", 5)
			proxy := testenv.NewLossy(t, testenv.DynamoDBEndpoint(), 1, func(op string, body []byte) (string, float64) {
				if op == "UpdateItem" && bytes.Contains(body, []byte("TOPUP#")) {
					return op, 1
				}
				return "", 0
			})
			proxy.Losses = []testenv.Loss{loss}
			e.sweep.TopUps = topupsdb.New(store.New(emulator.DynamoDBClient(proxy.URL), e.store.Table()))
			e.topUp("ws_a", "top_old", t0.Add(-25*time.Hour))
			r, err := e.sweep.Sweep(context.Background())
			if proxy.Lost("UpdateItem", loss) != 1 {
				t.Fatalf("the proxy lost %d answers; want 1", proxy.Lost("UpdateItem", loss))
			}
			if err != nil || r.TopUpsExpired != 1 {
				t.Errorf("sweep: %+v, %v; want the expiry recognised as its own", r, err)
			}
			if got := e.topUpStatus("ws_a", "top_old"); got != billing.CheckoutExpired {
				t.Errorf("top-up: %s; want expired", got)
			}
		})
	}
}

// A pack of compute units is a top-up by checkout too: pending past its
// session's life, the sweeper expires it like a top-up of the API balance,
// crediting nothing; Stripe's late payment of it is still credited, in
// units, once.
func TestTheSweeperExpiresPendingPacks(t *testing.T) {
	e := newEnv(t)
	e.sweep.TopUps = topupsdb.New(e.store)
	e.workspace("ws_a", 5)
	db := topupsdb.New(e.store)
	if err := db.CreateCheckout(e.ctx, billing.Checkout{ID: "top_pack", WorkspaceID: "ws_a", Status: billing.CheckoutPending,
		Requested: 50 * billing.USD, Units: 5000, CreatedBy: "owner@example.com", CreatedAt: t0.Add(-25 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if r, err := e.sweep.Sweep(e.ctx); err != nil || r.TopUpsExpired != 1 {
		t.Fatalf("sweep: %+v, %v; want the pack expired", r, err)
	}
	if got := e.topUpStatus("ws_a", "top_pack"); got != billing.CheckoutExpired {
		t.Errorf("the pack: %s; want expired", got)
	}
	acc := accountsdb.New(e.store)
	if u := e.units(acc, "ws_a"); u.Available != 0 {
		t.Errorf("an expired pack credited %+v", u)
	}
	for range 2 {
		if _, err := db.CreditCheckout(e.ctx, "ws_a", "top_pack", "cs_pack", 50*billing.USD, 5000, t0); err != nil {
			t.Fatal(err)
		}
	}
	if u := e.units(acc, "ws_a"); u.Available != 5000 {
		t.Errorf("the late payment of an expired pack: %+v; want 5000 units, once", u)
	}
}
