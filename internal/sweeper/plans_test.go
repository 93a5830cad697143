package sweeper_test

import (
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
)

// spendUnits creates a job billed in compute units and completes it.
func (e *env) spendUnits(ws string, units billing.Units) {
	e.t.Helper()
	e.nextID += time.Millisecond
	j := &job.Job{ID: job.NewID(e.clock.T), WorkspaceID: ws, CreatedAt: e.clock.T.Add(e.nextID),
		Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid", Request: []byte(`{}`),
		Currency: billing.CurrencyCU, Units: units, Price: 10}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Completed}, e.clock.T); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) units(acc *accountsdb.DB, ws string) billing.UnitBalance {
	e.t.Helper()
	a, err := ledgerdb.New(acc.Store).AuditLedger(e.ctx, ws)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range a.Differences {
		e.t.Errorf("ledger verify of %s: %s", ws, d)
	}
	return a.StoredUnits
}

// allowances counts a workspace's allowance entries in the ledger.
func (e *env) allowances(ws string) int {
	e.t.Helper()
	entries, err := ledgerdb.New(e.store).LedgerEntries(e.ctx, ws)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, en := range entries {
		if en.Kind == billing.Allowance {
			n++
		}
	}
	return n
}

// sweepTwiceAtOnce runs two sweeps concurrently, as two overlapping
// invocations would (without the lease that normally keeps them apart),
// and returns the plans they topped up between them.
func (e *env) sweepTwiceAtOnce() int {
	e.t.Helper()
	var wg sync.WaitGroup
	topped := make([]int, 2)
	for i := range topped {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.sweep.Sweep(e.ctx)
			if err != nil {
				e.t.Error(err)
			}
			topped[i] = r.ToppedUp
		}()
	}
	wg.Wait()
	return topped[0] + topped[1]
}

func TestPlanIsToppedUpOncePerMonthAcrossRetriesAndConcurrentSweeps(t *testing.T) {
	e := newEnv(t)
	acc := accountsdb.New(e.store)
	e.sweep.Plans = acc
	e.workspace("ws_plan", 5)
	e.workspace("ws_rich", 5)
	e.workspace("ws_none", 5)

	// 30 November, late: a new plan is topped up at once for November.
	e.clock.T = time.Date(2026, 11, 30, 23, 58, 0, 0, time.UTC)
	if n, err := acc.SetPlan(e.ctx, "ws_plan", 1000, e.clock.T); err != nil || n != 1000 {
		t.Fatalf("SetPlan = %d, %v; want 1000 units credited", n, err)
	}
	if _, err := acc.SetPlan(e.ctx, "ws_rich", 1000, e.clock.T); err != nil {
		t.Fatal(err)
	}
	// ws_rich's plan shrinks to 400 within the month: its 1000 units stay.
	if n, err := acc.SetPlan(e.ctx, "ws_rich", 400, e.clock.T); err != nil || n != 0 {
		t.Fatalf("changing a plan within a topped-up month credited %d, %v; want nothing", n, err)
	}
	e.spendUnits("ws_plan", 300)
	if n := e.sweepTwiceAtOnce(); n != 0 {
		t.Errorf("November's sweeps topped up %d plans; want none (done when the plans were set)", n)
	}
	if u := e.units(acc, "ws_plan"); u.Available != 700 || u.Spent != 300 {
		t.Errorf("ws_plan in November: %+v; want 700 available, 300 spent", u)
	}

	// 1 December, 00:00:30: two sweeps at once, then retries.
	e.clock.T = time.Date(2026, 12, 1, 0, 0, 30, 0, time.UTC)
	if n := e.sweepTwiceAtOnce(); n != 1 {
		t.Errorf("the first sweeps of December topped up %d plans; want 1 (ws_plan, once; ws_rich has 1000 > 400)", n)
	}
	for i := 0; i < 2; i++ { // a retried invocation
		if r, err := e.sweep.Sweep(e.ctx); err != nil || r.ToppedUp != 0 {
			t.Errorf("retried sweep: topped up %d, %v; want none", r.ToppedUp, err)
		}
	}
	// A sweep that died after its top-ups, before marking the month done:
	// the next one finds each workspace's month marked.
	if _, err := e.store.Client().DeleteItem(e.ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(e.store.Table()), Key: store.Key("PLANS", "DONE#2026-12"),
	}); err != nil {
		t.Fatal(err)
	}
	e.clock.T = e.clock.T.Add(time.Minute)
	if n := e.sweepTwiceAtOnce(); n != 0 {
		t.Errorf("sweeps after a lost month mark topped up %d plans; want none", n)
	}
	if u := e.units(acc, "ws_plan"); u.Available != 1000 || u.Spent != 300 {
		t.Errorf("ws_plan in December: %+v; want topped back up to 1000 available", u)
	}
	if u := e.units(acc, "ws_rich"); u.Available != 1000 {
		t.Errorf("ws_rich in December: %+v; want its 1000 unused units kept (plan 400)", u)
	}
	if u := e.units(acc, "ws_none"); u != (billing.UnitBalance{}) {
		t.Errorf("a workspace without a plan got units: %+v", u)
	}
	if n := e.allowances("ws_plan"); n != 2 {
		t.Errorf("ws_plan has %d allowance entries; want 2 (November, December)", n)
	}

	// Later in December nothing more; in January once again.
	e.spendUnits("ws_plan", 250)
	e.clock.T = time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)
	if n := e.sweepTwiceAtOnce(); n != 0 {
		t.Errorf("a late December sweep topped up %d plans", n)
	}
	e.clock.T = time.Date(2027, 1, 1, 0, 0, 5, 0, time.UTC)
	if n := e.sweepTwiceAtOnce() + e.sweepTwiceAtOnce(); n != 1 {
		t.Errorf("January's sweeps topped up %d plans; want 1 (ws_plan; ws_rich has 1000 > 400)", n)
	}
	if u := e.units(acc, "ws_plan"); u.Available != 1000 || u.Spent != 550 {
		t.Errorf("ws_plan in January: %+v; want 1000 available, 550 spent", u)
	}
	if n := e.allowances("ws_plan"); n != 3 {
		t.Errorf("ws_plan has %d allowance entries; want 3", n)
	}
	// Ending a plan stops its top-ups.
	if _, err := acc.SetPlan(e.ctx, "ws_plan", 0, e.clock.T); err != nil {
		t.Fatal(err)
	}
	e.spendUnits("ws_plan", 100)
	e.clock.T = time.Date(2027, 2, 1, 0, 0, 5, 0, time.UTC)
	if n := e.sweepTwiceAtOnce(); n != 0 {
		t.Errorf("February topped up %d plans; want none (ws_plan's plan ended, ws_rich has enough)", n)
	}
	if u := e.units(acc, "ws_plan"); u.Available != 900 {
		t.Errorf("ws_plan after its plan ended: %+v; want 900 available", u)
	}
}
