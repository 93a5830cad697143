package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/testenv"
)

// pricedJob is a new job of workspace ws costing price.
func pricedJob(ws string, at time.Time, price billing.Micros) *job.Job {
	j := newJob(ws, at)
	j.Price = price
	return j
}

func topUp(t *testing.T, s *store.Store, ws string, amount billing.Micros) {
	t.Helper()
	if _, err := accountsdb.New(s).TopUp(context.Background(), ws, fmt.Sprintf("pay_%d", rand.Int63()), amount, t0); err != nil {
		t.Fatal(err)
	}
}

// checkLedger fails the test when the workspace's balance is not exactly
// what its ledger adds up to, and returns the balance.
func checkLedger(t *testing.T, s *store.Store, ws string) billing.Balance {
	t.Helper()
	a, err := ledgerdb.New(s).AuditLedger(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range a.Differences {
		t.Errorf("%s: %s", ws, d)
	}
	return a.Stored
}

func TestParallelCreationsNeverOverdraw(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 100, 100)
	const price = 450_000 // 0.45 USD
	topUp(t, s, "ws_a", 11*price)
	var ok, short atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.CreateJob(ctx, pricedJob("ws_a", t0.Add(time.Duration(i)*time.Millisecond), price))
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, billing.ErrInsufficientFunds):
				short.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 11 || short.Load() != 29 {
		t.Errorf("%d created, %d refused for funds; want 11 and 29", ok.Load(), short.Load())
	}
	b := checkLedger(t, s, "ws_a")
	if b.Available != 0 || b.Reserved != 11*price || b.Spent != 0 {
		t.Errorf("balance after the rush: %+v; want all of it reserved", b)
	}
	// A refused creation wrote nothing: 11 jobs, 11 slots.
	if n := checkSlots(t, s, "ws_a"); n.Active != 11 {
		t.Errorf("%d active jobs; want 11", n.Active)
	}
}

func TestSettlementChargesCompletedAndReleasesTheRest(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 20, 20)
	topUp(t, s, "ws_a", 10*billing.USD)
	const price = 1_209_500
	ends := []job.Change{
		{To: job.Completed, Outputs: []string{"results/x.png"}},
		{To: job.Failed, Error: &job.Error{Code: job.CodeEngineError, Message: "x"}},
		{To: job.Failed, Error: &job.Error{Code: job.CodeTimeout, Message: "x"}},
		{To: job.Cancelled},
	}
	for i, c := range ends {
		j := pricedJob("ws_a", t0.Add(time.Duration(i)*time.Second), price)
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Transition(ctx, j, c, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		// The same end again, from the same stale view: nothing moves.
		if _, err := s.Transition(ctx, j, c, t0.Add(2*time.Minute)); !errors.Is(err, job.ErrConflict) {
			t.Errorf("ending %s twice: %v; want job.ErrConflict", c.To, err)
		}
	}
	b := checkLedger(t, s, "ws_a")
	want := billing.Balance{Available: 10*billing.USD - price, Spent: price}
	if b != want {
		t.Errorf("balance %+v; want %+v (one charge, three releases)", b, want)
	}
}

// An in-flight job finishes and is charged even when the balance is spent
// meanwhile (docs/api.md, "Balance and settlement": in-flight jobs finish normally).
func TestInFlightJobIsChargedAfterTheBalanceRunsOut(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 20, 20)
	topUp(t, s, "ws_a", 1*billing.USD)
	first := pricedJob("ws_a", t0, 600_000)
	if err := s.CreateJob(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, pricedJob("ws_a", t0.Add(time.Second), 600_000)); !errors.Is(err, billing.ErrInsufficientFunds) {
		t.Fatalf("second job with 0.4 USD left: %v; want ErrInsufficientFunds", err)
	}
	if _, err := s.Transition(ctx, first, job.Change{To: job.Completed}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if b := checkLedger(t, s, "ws_a"); b.Spent != 600_000 || b.Available != 400_000 {
		t.Errorf("balance %+v; want 0.6 spent, 0.4 available", b)
	}
}

func TestCancelRacingCompletionSettlesOnce(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 50, 50)
	topUp(t, s, "ws_a", 100*billing.USD)
	for i := 0; i < 20; i++ {
		j := pricedJob("ws_a", t0.Add(time.Duration(i)*time.Second), 250_000)
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for k, to := range []job.Status{job.Cancelled, job.Completed, job.Completed} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[k] = s.Transition(ctx, j, job.Change{To: to}, t0.Add(time.Hour))
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else if !errors.Is(err, job.ErrConflict) {
				t.Fatal(err)
			}
		}
		if won != 1 {
			t.Fatalf("job %d: %d writers won; want exactly one", i, won)
		}
	}
	b := checkLedger(t, s, "ws_a")
	if b.Reserved != 0 || b.Available+b.Spent != 100*billing.USD {
		t.Errorf("balance %+v after every job ended", b)
	}
}

func TestCreditLimitLetsInvoicedWorkspacesRunWithoutPrepaying(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 50, 50)
	// The store learns the limit from the refused write and retries with it.
	if _, err := accountsdb.New(s).SetCreditLimit(ctx, "ws_a", 2*billing.USD); err != nil {
		t.Fatal(err)
	}
	var created []*job.Job
	for i := 0; i < 5; i++ {
		j := pricedJob("ws_a", t0.Add(time.Duration(i)*time.Second), 500_000)
		err := s.CreateJob(ctx, j)
		if i < 4 && err != nil || i == 4 && !errors.Is(err, billing.ErrInsufficientFunds) {
			t.Fatalf("job %d under a 2 USD limit at 0.5 each: %v", i, err)
		}
		if err == nil {
			created = append(created, j)
		}
	}
	for _, j := range created {
		if _, err := s.Transition(ctx, j, job.Change{To: job.Completed}, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	b := checkLedger(t, s, "ws_a")
	if b.Available != -2*billing.USD || b.Owed() != 2*billing.USD || b.Spent != 2*billing.USD {
		t.Errorf("invoiced balance %+v; want 2 USD owed and spent", b)
	}
	// Paying the invoice makes room again; lowering the limit stops new jobs.
	topUp(t, s, "ws_a", 2*billing.USD)
	if err := s.CreateJob(ctx, pricedJob("ws_a", t0.Add(time.Hour), 500_000)); err != nil {
		t.Errorf("after paying: %v", err)
	}
	if _, err := accountsdb.New(s).SetCreditLimit(ctx, "ws_a", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, pricedJob("ws_a", t0.Add(2*time.Hour), 500_000)); !errors.Is(err, billing.ErrInsufficientFunds) {
		t.Errorf("limit removed, nothing prepaid: %v; want ErrInsufficientFunds", err)
	}
	checkLedger(t, s, "ws_a")
}

func keyed(j *job.Job, key string) *job.Job {
	j.Idempotency = &job.Idempotency{Key: key, RequestHash: job.RequestHash(j.Endpoint, j.Request, j.WebhookURL),
		Expires: j.CreatedAt.Add(job.IdempotencyWindow)}
	return j
}

func TestIdempotencyKeyCreatesAndChargesOnce(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 50, 50)
	topUp(t, s, "ws_a", 10*billing.USD)
	var created, replayed atomic.Int32
	var firstID atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := keyed(pricedJob("ws_a", t0, 100_000), "key-1")
			err := s.CreateJob(ctx, j)
			var r *job.Replayed
			switch {
			case err == nil:
				created.Add(1)
				firstID.Store(j.ID)
			case errors.As(err, &r):
				replayed.Add(1)
			case errors.Is(err, job.ErrKeyInFlight):
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if created.Load() != 1 || replayed.Load() == 0 {
		t.Fatalf("%d created, %d replayed; want one job and replays", created.Load(), replayed.Load())
	}
	// A later retry gets that job; another request with the key is refused.
	var r *job.Replayed
	if err := s.CreateJob(ctx, keyed(pricedJob("ws_a", t0.Add(time.Hour), 100_000), "key-1")); !errors.As(err, &r) || r.JobID != firstID.Load() {
		t.Errorf("retry an hour later: %v; want a replay of %v", err, firstID.Load())
	}
	other := pricedJob("ws_a", t0.Add(time.Hour), 100_000)
	other.Request = []byte(`{"prompt":"y"}`)
	if err := s.CreateJob(ctx, keyed(other, "key-1")); !errors.Is(err, job.ErrKeyReused) {
		t.Errorf("same key, other body: %v; want ErrKeyReused", err)
	}
	// Keys are scoped to their workspace, and forgotten after 24 hours.
	addWorkspace(t, s, "ws_b", 50, 50)
	topUp(t, s, "ws_b", 10*billing.USD)
	if err := s.CreateJob(ctx, keyed(pricedJob("ws_b", t0, 100_000), "key-1")); err != nil {
		t.Errorf("the same key in another workspace: %v", err)
	}
	if err := s.CreateJob(ctx, keyed(pricedJob("ws_a", t0.Add(25*time.Hour), 100_000), "key-1")); err != nil {
		t.Errorf("the key after 25 hours: %v; want a new job", err)
	}
	if b := checkLedger(t, s, "ws_a"); b.Reserved != 200_000 {
		t.Errorf("reserved %s; want two jobs' worth", b.Reserved)
	}
}

func TestRefusedCreationLeavesTheKeyFree(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 50, 50)
	if err := s.CreateJob(ctx, keyed(pricedJob("ws_a", t0, 100_000), "k")); !errors.Is(err, billing.ErrInsufficientFunds) {
		t.Fatalf("no balance: %v", err)
	}
	topUp(t, s, "ws_a", 5*billing.USD)
	if err := s.CreateJob(ctx, keyed(pricedJob("ws_a", t0.Add(time.Second), 100_000), "k")); err != nil {
		t.Errorf("the retry after a top-up is judged afresh: %v", err)
	}
}

// conflicting answers the first n TransactWriteItems calls as DynamoDB does
// when another transaction holds an item, which DynamoDB Local never does,
// and passes the rest to it.
type conflicting struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
	n     atomic.Int32
	calls atomic.Int32
}

func (c *conflicting) Do(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		c.calls.Add(1)
		if c.n.Add(-1) >= 0 {
			body := `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",` +
				`"Message":"Transaction cancelled","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict"},{"Code":"None"},{"Code":"None"}]}`
			return &http.Response{
				StatusCode: 400, Request: r,
				Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
				Body:   io.NopCloser(bytes.NewBufferString(body)),
			}, nil
		}
	}
	return c.next.Do(r)
}

func TestTransactionConflictIsRetried(t *testing.T) {
	base := newStore(t)
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	c := &conflicting{}
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { c.next, o.HTTPClient = o.HTTPClient, c })
	s := store.New(db, base.Table())
	addWorkspace(t, s, "ws_a", 20, 20)
	topUp(t, s, "ws_a", 5*billing.USD)

	c.calls.Store(0)
	c.n.Store(2)
	if err := s.CreateJob(ctx, pricedJob("ws_a", t0, 100_000)); err != nil {
		t.Fatalf("after two conflicts: %v", err)
	}
	if c.calls.Load() != 3 {
		t.Errorf("%d transactions sent; want 2 conflicts and a success", c.calls.Load())
	}
	// A key whose transaction keeps conflicting is another request's: 409.
	c.n.Store(100)
	if err := s.CreateJob(ctx, keyed(pricedJob("ws_a", t0, 100_000), "k")); !errors.Is(err, job.ErrKeyInFlight) {
		t.Errorf("conflicts that outlast the retries, with a key: %v; want ErrKeyInFlight", err)
	}
	c.n.Store(0)
	if b := checkLedger(t, s, "ws_a"); b.Reserved != 100_000 {
		t.Errorf("reserved %s; want exactly the one job", b.Reserved)
	}
}

// TestRandomisedSoak runs a fixed-seed mix of creations, cancellations,
// completions, failures and top-ups over several workspaces in parallel;
// afterwards every ledger adds up and no money appeared or vanished.
func TestRandomisedSoak(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	workspaces := []string{"ws_a", "ws_b", "ws_c", "ws_d"}
	var mu sync.Mutex
	topUps := map[string]billing.Micros{}
	for _, ws := range workspaces {
		addWorkspace(t, s, ws, 8, 3)
	}
	const workers, steps = 6, 70
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(1000 + w)))
			var mine []*job.Job
			for i := 0; i < steps; i++ {
				ws := workspaces[rng.Intn(len(workspaces))]
				at := t0.Add(time.Duration(w*steps+i) * time.Millisecond)
				switch op := rng.Intn(10); {
				case op < 4:
					j := pricedJob(ws, at, billing.Micros(rng.Intn(2_000_000)))
					err := s.CreateJob(ctx, j)
					if err == nil {
						mine = append(mine, j)
					} else if !errors.Is(err, billing.ErrInsufficientFunds) && !errors.Is(err, job.ErrTooManyJobs) {
						t.Error(err)
						return
					}
				case op < 5:
					amount := billing.Micros(1+rng.Intn(5)) * billing.USD
					if _, err := accountsdb.New(s).TopUp(ctx, ws, fmt.Sprintf("pay_%d_%d", w, i), amount, at); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					topUps[ws] += amount
					mu.Unlock()
				case len(mine) > 0:
					k := rng.Intn(len(mine))
					j := mine[k]
					c := []job.Change{
						{To: job.Completed}, {To: job.Cancelled},
						{To: job.Failed, Error: &job.Error{Code: job.CodeEngineError, Message: "x"}},
					}[rng.Intn(3)]
					if _, err := s.Transition(ctx, j, c, at); err != nil && !errors.Is(err, job.ErrConflict) {
						t.Error(err)
						return
					}
					if rng.Intn(4) > 0 { // sometimes end it again later
						mine = append(mine[:k], mine[k+1:]...)
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, ws := range workspaces {
		b := checkLedger(t, s, ws)
		if b.Available < 0 {
			t.Errorf("%s: available %s below zero without credit", ws, b.Available)
		}
		if total := b.Available + b.Reserved + b.Spent; total != topUps[ws] {
			t.Errorf("%s: available + reserved + spent = %s; top-ups %s", ws, total, topUps[ws])
		}
		checkSlots(t, s, ws)
	}
}
