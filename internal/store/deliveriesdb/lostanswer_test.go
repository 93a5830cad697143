package deliveriesdb_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"genjobs/internal/emulator"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/storetest"
	"genjobs/internal/testenv"
	"genjobs/internal/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)

func newDB(t *testing.T) *deliveriesdb.DB { return deliveriesdb.New(storetest.New(t)) }

var answerLosses = []testenv.Loss{testenv.Reset, testenv.ServerError}

// lossyDB is the deliveries on a table of their own whose client goes
// through a proxy that loses the answer of every first attempt of the
// writes whose operation is op and whose body contains marker: DynamoDB
// applies the write, the SDK retries it, and the retry meets its own
// success.
func lossyDB(t *testing.T, loss testenv.Loss, op, marker string) (lossy, direct *deliveriesdb.DB, proxy *testenv.Lossy) {
	t.Helper()
	direct = newDB(t)
	proxy = testenv.NewLossy(t, testenv.DynamoDBEndpoint(), 1, func(o string, body []byte) (string, float64) {
		if o == op && bytes.Contains(body, []byte(marker)) {
			return op, 1
		}
		return "", 0
	})
	proxy.Losses = []testenv.Loss{loss}
	return deliveriesdb.New(store.New(emulator.DynamoDBClient(proxy.URL), direct.Table())), direct, proxy
}

// A delivery claim whose answer is lost is ours, not another
// invocation's: the deliverer would otherwise drop the attempt's only
// message and the webhook would never be sent.
func TestRetriedDeliveryClaimAndRecordMeetTheirOwnWrites(t *testing.T) {
	for _, loss := range answerLosses {
		t.Run(loss.String(), func(t *testing.T) {
			s, direct, proxy := lossyDB(t, loss, "UpdateItem", "claim_")
			ctx := context.Background()
			id := job.NewID(t0)
			if _, err := direct.CreateDelivery(ctx, &webhook.Delivery{JobID: id, WorkspaceID: "ws_a", ID: "whk_1",
				URL: "http://127.0.0.1:9/hook", State: webhook.Pending, NextAt: t0, CreatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			if err := s.ClaimAttempt(ctx, id, 1, "msg-1", t0.Add(time.Minute), t0); err != nil {
				t.Fatalf("claim whose answer was lost: %v; want it recognised as ours", err)
			}
			if err := direct.ClaimAttempt(ctx, id, 1, "msg-2", t0.Add(time.Minute), t0); err != webhook.ErrClaimed {
				t.Errorf("another message's claim: %v; want ErrClaimed", err)
			}
			next := t0.Add(5 * time.Second)
			a := webhook.Attempt{Number: 1, At: t0, EndedAt: t0.Add(time.Second), StatusCode: 503, Error: "503", NextAt: &next}
			if err := s.RecordAttempt(ctx, id, "msg-1", a, webhook.Pending, next); err != nil {
				t.Fatalf("record whose answer was lost: %v; want it recognised as ours", err)
			}
			if got := proxy.Lost("UpdateItem", loss); got != 2 {
				t.Errorf("the proxy lost %d answers; want 2 (the claim's and the record's)", got)
			}
			d, err := direct.Delivery(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Attempts) != 1 || d.State != webhook.Pending || !d.NextAt.Equal(next) {
				t.Errorf("delivery %+v; want one attempt recorded, due again at %s", d, next)
			}
			// Someone else's record of the same attempt is still refused.
			if err := direct.RecordAttempt(ctx, id, "msg-2", a, webhook.Pending, next); err == nil {
				t.Error("a second record of attempt 1 under another claim succeeded")
			}
		})
	}
}
