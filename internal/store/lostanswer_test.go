package store_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/emulator"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/testenv"
)

// lossyStore is a store on a table of its own whose client goes through a
// proxy that loses the answer of every first attempt of the writes whose
// operation is op and whose body contains marker: DynamoDB applies the
// write, the SDK retries it, and the retry meets its own success.
func lossyStore(t *testing.T, loss testenv.Loss, op, marker string) (lossy, direct *store.Store, proxy *testenv.Lossy) {
	t.Helper()
	direct = newStore(t)
	proxy = testenv.NewLossy(t, testenv.DynamoDBEndpoint(), 1, func(o string, body []byte) (string, float64) {
		if o == op && bytes.Contains(body, []byte(marker)) {
			return op, 1
		}
		return "", 0
	})
	proxy.Losses = []testenv.Loss{loss}
	return store.New(emulator.DynamoDBClient(proxy.URL), direct.Table()), direct, proxy
}

var answerLosses = []testenv.Loss{testenv.Reset, testenv.ServerError}

// A worker's claim whose answer is lost is retried by the SDK; the retry
// fails its condition (a lease is in force: our own). The claim must be
// recognised as ours, or the job waits a whole lease for nobody.
func TestRetriedClaimMeetsItsOwnLease(t *testing.T) {
	for _, loss := range answerLosses {
		t.Run(loss.String(), func(t *testing.T) {
			s, direct, proxy := lossyStore(t, loss, "UpdateItem", "attempts :one")
			ctx := context.Background()
			addWorkspace(t, direct, "ws_a", 10, 10)
			j := newJob("ws_a", t0)
			if err := direct.CreateJob(ctx, j); err != nil {
				t.Fatal(err)
			}
			lease := job.Lease{ID: "lease-ours", Until: t0.Add(time.Minute)}
			got, err := s.Transition(ctx, j, job.Change{To: job.Scheduled, Lease: &lease}, t0)
			if proxy.Lost("UpdateItem", loss) != 1 {
				t.Fatalf("the proxy lost %d answers; want 1", proxy.Lost("UpdateItem", loss))
			}
			if err != nil {
				t.Fatalf("claim whose answer was lost: %v; want it recognised as ours", err)
			}
			if got.Lease.ID != lease.ID || got.Status != job.Scheduled || got.Attempts != 1 {
				t.Errorf("claimed job: lease %q, %s, attempts %d; want ours, scheduled, 1", got.Lease.ID, got.Status, got.Attempts)
			}
			// Another worker's claim still fails.
			other := job.Lease{ID: "lease-other", Until: t0.Add(time.Minute)}
			if _, err := direct.Transition(ctx, got, job.Change{To: job.Scheduled, Lease: &other}, t0); err != job.ErrConflict {
				t.Errorf("a second worker's claim: %v; want ErrConflict", err)
			}
		})
	}
}

// An end whose answer is lost settles the job once and is a success.
func TestRetriedEndSettlesOnce(t *testing.T) {
	for _, loss := range answerLosses {
		t.Run(loss.String(), func(t *testing.T) {
			s, direct, proxy := lossyStore(t, loss, "TransactWriteItems", "settlement")
			ctx := context.Background()
			addWorkspace(t, direct, "ws_a", 10, 10)
			if _, err := accountsdb.New(direct).TopUp(ctx, "ws_a", "pay", billing.USD, t0); err != nil {
				t.Fatal(err)
			}
			j := newJob("ws_a", t0)
			j.Price = 100_000
			if err := direct.CreateJob(ctx, j); err != nil {
				t.Fatal(err)
			}
			got, err := s.Transition(ctx, j, job.Change{To: job.Completed}, t0.Add(time.Second))
			if proxy.Lost("TransactWriteItems", loss) != 1 {
				t.Fatalf("the proxy lost %d answers; want 1", proxy.Lost("TransactWriteItems", loss))
			}
			if err != nil || got.Status != job.Completed {
				t.Fatalf("end whose answer was lost: %v, %v; want completed", got, err)
			}
			entries, err := ledgerdb.New(direct).LedgerEntries(ctx, "ws_a")
			if err != nil {
				t.Fatal(err)
			}
			charges := 0
			for _, e := range entries {
				if e.Kind == billing.Charge {
					charges++
				}
			}
			if charges != 1 {
				t.Errorf("%d charges; want 1", charges)
			}
			checkSlots(t, direct, "ws_a")
		})
	}
}
