package deliveriesdb_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"genjobs/internal/emulator"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/testenv"
	"genjobs/internal/webhook"
)

// delivery stores a pending delivery of a new job, due at t0.
func delivery(t *testing.T, s *deliveriesdb.DB) *webhook.Delivery {
	t.Helper()
	d, err := s.CreateDelivery(context.Background(), &webhook.Delivery{JobID: job.NewID(t0), WorkspaceID: "ws_a",
		ID: webhook.NewID(), URL: "http://127.0.0.1:9/hook", State: webhook.Pending, NextAt: t0, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// attempt records attempt n of d, made under claim at, with state after it.
func attempt(t *testing.T, s *deliveriesdb.DB, d *webhook.Delivery, n int, claim string, at time.Time, status int, state webhook.State, next time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := s.ClaimAttempt(ctx, d.JobID, n, claim, at.Add(time.Minute), at); err != nil {
		t.Fatalf("claim attempt %d: %v", n, err)
	}
	a := webhook.Attempt{Number: n, At: at, EndedAt: at.Add(time.Second), StatusCode: status}
	if state == webhook.Pending {
		a.NextAt = &next
	}
	if err := s.RecordAttempt(ctx, d.JobID, claim, a, state, next); err != nil {
		t.Fatalf("record attempt %d: %v", n, err)
	}
}

func reread(t *testing.T, s *deliveriesdb.DB, jobID string) *webhook.Delivery {
	t.Helper()
	d, err := s.Delivery(context.Background(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// overdue lists the deliveries the sweeper would find due before before.
func overdue(t *testing.T, s *deliveriesdb.DB, before time.Time) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	if err := s.EachOverdueDelivery(context.Background(), before, func(id string) error { found[id] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	return found
}

// A delivery waiting for its retry, and one that failed, are both made due
// now, with their attempts kept, and are back on the index the sweeper
// reads (a lost message is sent again).
func TestRedeliverMakesTheNextAttemptDueNow(t *testing.T) {
	s := newDB(t)
	ctx := context.Background()
	now := t0.Add(time.Minute)
	waiting := delivery(t, s)
	attempt(t, s, waiting, 1, "m1", t0, 503, webhook.Pending, t0.Add(5*time.Minute))
	failed := delivery(t, s)
	attempt(t, s, failed, 1, "m2", t0, 410, webhook.Failed, time.Time{})

	for _, d := range []*webhook.Delivery{reread(t, s, waiting.JobID), reread(t, s, failed.JobID)} {
		if err := s.Redeliver(ctx, d, "redeliver-"+d.JobID, now); err != nil {
			t.Fatalf("redeliver a %s delivery: %v", d.State, err)
		}
		got := reread(t, s, d.JobID)
		if got.State != webhook.Pending || !got.NextAt.Equal(now) || len(got.Attempts) != 1 || got.Due() != 2 {
			t.Errorf("after redelivering a %s delivery: %s, due %s, %d attempts; want pending, due %s, attempt 2 next",
				d.State, got.State, got.NextAt, len(got.Attempts), now)
		}
	}
	if found := overdue(t, s, now.Add(time.Second)); !found[waiting.JobID] || !found[failed.JobID] {
		t.Errorf("overdue deliveries %v; want both redelivered ones", found)
	}
}

func TestRedeliverRefuses(t *testing.T) {
	s := newDB(t)
	ctx := context.Background()
	now := t0.Add(time.Minute)

	none := &webhook.Delivery{JobID: job.NewID(t0), WorkspaceID: "ws_a"}
	if err := s.Redeliver(ctx, none, "tok", now); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("a job without a delivery: %v; want ErrNotFound", err)
	}
	if _, err := s.Delivery(ctx, none.JobID); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("the refused write created a delivery: %v", err)
	}

	delivered := delivery(t, s)
	attempt(t, s, delivered, 1, "m1", t0, 204, webhook.Succeeded, time.Time{})
	if err := s.Redeliver(ctx, reread(t, s, delivered.JobID), "tok", now); !errors.Is(err, webhook.ErrDelivered) {
		t.Errorf("a delivered webhook: %v; want ErrDelivered", err)
	}

	// An attempt being made: the write would let a second one start.
	busy := delivery(t, s)
	if err := s.ClaimAttempt(ctx, busy.JobID, 1, "m2", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := s.Redeliver(ctx, reread(t, s, busy.JobID), "tok", now); !errors.Is(err, webhook.ErrClaimed) {
		t.Errorf("an attempt under way: %v; want ErrClaimed", err)
	}

	// Read before an attempt was made: the message would name a stale attempt.
	stale := delivery(t, s)
	read := reread(t, s, stale.JobID)
	attempt(t, s, stale, 1, "m3", t0, 503, webhook.Pending, t0.Add(5*time.Minute))
	if err := s.Redeliver(ctx, read, "tok", now); !errors.Is(err, webhook.ErrClaimed) {
		t.Errorf("a delivery read before its last attempt: %v; want ErrClaimed", err)
	}
	if got := reread(t, s, stale.JobID); !got.NextAt.Equal(t0.Add(5 * time.Minute)) {
		t.Errorf("the refused write moved the attempt to %s", got.NextAt)
	}
}

// A redelivery whose answer is lost is retried by the SDK; by then the
// deliverer may have made the attempt it made due, so the condition fails.
// The retry must know its own write, or the operator is told the webhook
// could not be redelivered (or was delivered already) when it just was.
func TestRetriedRedeliveryMeetsItsOwnWrite(t *testing.T) {
	for _, loss := range answerLosses {
		t.Run(loss.String(), func(t *testing.T) {
			direct := newDB(t)
			ctx := context.Background()
			now := t0.Add(time.Minute)
			d := delivery(t, direct)
			attempt(t, direct, d, 1, "m1", t0, 503, webhook.Pending, t0.Add(5*time.Minute))

			// The deliverer makes attempt 2 between the lost answer and the retry.
			calls := 0
			var between error
			proxy := testenv.NewLossy(t, testenv.DynamoDBEndpoint(), 1, func(op string, body []byte) (string, float64) {
				if op != "UpdateItem" || !bytes.Contains(body, []byte("redelivery_id")) {
					return "", 0
				}
				if calls++; calls == 2 {
					between = direct.ClaimAttempt(ctx, d.JobID, 2, "m2", now.Add(time.Minute), now)
					if between == nil {
						a := webhook.Attempt{Number: 2, At: now, EndedAt: now.Add(time.Second), StatusCode: 204}
						between = direct.RecordAttempt(ctx, d.JobID, "m2", a, webhook.Succeeded, time.Time{})
					}
				}
				return "redeliver", 1
			})
			proxy.Losses = []testenv.Loss{loss}
			lossy := deliveriesdb.New(store.New(emulator.DynamoDBClient(proxy.URL), direct.Table()))

			err := lossy.Redeliver(ctx, reread(t, direct, d.JobID), "redeliver-1", now)
			if proxy.Lost("redeliver", loss) != 1 || calls != 2 || between != nil {
				t.Fatalf("lost %d answers, %d calls, attempt meanwhile: %v; want 1 lost answer, its retry after attempt 2", proxy.Lost("redeliver", loss), calls, between)
			}
			if err != nil {
				t.Fatalf("redelivery whose answer was lost: %v; want it recognised as ours", err)
			}
			// Someone else's redelivery is refused: it was delivered.
			if err := direct.Redeliver(ctx, reread(t, direct, d.JobID), "redeliver-2", now); !errors.Is(err, webhook.ErrDelivered) {
				t.Errorf("another redelivery after success: %v; want ErrDelivered", err)
			}
		})
	}
}
