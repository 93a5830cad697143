package httpapi_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/store/ledgerdb"
)

// mixModels are the endpoints the mix creates, with their prices.
var mixModels = []struct {
	path  string
	usd   billing.Micros
	units billing.Units
}{
	{"/generate/image/vendor-b/model-e-4", 30_000, 3},
	{"/generate/3d/vendor-g/model-g-3.1-rapid", 100_000, 10},
	{"/generate/enhance/vendor-a/standard-enhance", 20_000, 2},
}

// books is what a workspace's balances must be, kept by the test.
type books struct {
	usd   billing.Balance
	units billing.UnitBalance
}

type mixJob struct {
	id, ws   string
	inUnits  bool
	usd      billing.Micros
	units    billing.Units
	creator  string // "token" or "person"
	origin   httpapi.Origin
	ended    bool
	endState job.Status
}

// TestMixedJobsKeepBothLedgersExact makes 220 jobs in two workspaces, at
// random: API token jobs over REST (through the Lambda adapter) and
// through MCP with a token, billed in USD; application and OAuth MCP jobs,
// in process, billed in compute units; each completed, failed, cancelled
// (some twice) or left running, and creations refused for want of units.
// Both ledgers must end exact, ledger verify clean, USD moved only by the
// token jobs and compute units only by the people's.
func TestMixedJobsKeepBothLedgersExact(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))
	tokens := map[string]string{"ws_a": e.tokenA, "ws_b": e.tokenB}
	want := map[string]*books{}
	for _, ws := range []string{"ws_a", "ws_b"} {
		e.plan(ws, 100) // small: some of the people's creations find the units gone
		usd, units := e.units(ws)
		want[ws] = &books{usd, units}
	}
	var jobs []*mixJob
	var open []*mixJob
	refused, made := 0, 0

	end := func(j *mixJob, to job.Status) {
		t.Helper()
		var err error
		switch to {
		case job.Cancelled:
			var r response
			if j.creator == "token" {
				r = e.do("DELETE", "/jobs/"+j.id, tokens[j.ws], "")
			} else {
				r = e.inProcess(j.origin, "DELETE", "/jobs/"+j.id, "", "")
			}
			if j.ended && r.status != 409 || !j.ended && r.status != 200 {
				t.Fatalf("cancel of %s (ended %v): %d %s", j.id, j.ended, r.status, r.body)
			}
		default:
			change := job.Change{To: to}
			if to == job.Failed {
				change.Error = &job.Error{Code: job.CodeEngineError, Message: "the engine gave up"}
			}
			_, err = e.store.Transition(ctx, e.storedJob(j.id), change, now)
			if j.ended && err == nil || !j.ended && err != nil {
				t.Fatalf("%s of %s (ended %v): %v", to, j.id, j.ended, err)
			}
		}
		if j.ended {
			return // a second end settles nothing
		}
		j.ended, j.endState = true, to
		b := want[j.ws]
		switch {
		case j.inUnits && to == job.Completed:
			b.units.Reserved -= j.units
			b.units.Spent += j.units
		case j.inUnits:
			b.units.Reserved -= j.units
			b.units.Available += j.units
		case to == job.Completed:
			b.usd.Reserved -= j.usd
			b.usd.Spent += j.usd
		default:
			b.usd.Reserved -= j.usd
			b.usd.Available += j.usd
		}
	}

	for i := 0; made < 220; i++ {
		if i == 1000 {
			t.Fatalf("only %d jobs made in 1000 tries", made)
		}
		ws := []string{"ws_a", "ws_b"}[rng.IntN(2)]
		m := mixModels[rng.IntN(len(mixModels))]
		j := &mixJob{ws: ws, usd: m.usd, units: m.units}
		var r response
		switch kind := rng.IntN(4); kind {
		case 0: // an API token over REST
			j.creator = "token"
			r = e.do("POST", m.path, tokens[ws], minimal[m.path])
		case 1: // MCP with a token
			j.creator, j.origin = "token", httpapi.Origin{Source: job.SourceMCP}
			r = e.inProcess(j.origin, "POST", m.path, tokens[ws], minimal[m.path])
		default: // the application, or an OAuth MCP connection
			j.creator, j.inUnits = "person", true
			j.origin = person(ws, []string{job.SourceApp, job.SourceMCP}[kind-2])
			r = e.inProcess(j.origin, "POST", m.path, "", minimal[m.path])
		}
		b := want[ws]
		switch {
		case j.inUnits && r.status == 402:
			if string(r.body) != noUnits || b.units.Available >= j.units {
				t.Fatalf("creation refused with %d CU available for %d: %s", b.units.Available, j.units, r.body)
			}
			refused++
			continue
		case r.status != 200:
			t.Fatalf("creation %d: %d %s", i, r.status, r.body)
		case j.inUnits:
			if b.units.Available < j.units {
				t.Fatalf("a job of %d CU created with %d available", j.units, b.units.Available)
			}
			b.units.Available -= j.units
			b.units.Reserved += j.units
		default:
			b.usd.Available -= j.usd
			b.usd.Reserved += j.usd
		}
		made++
		j.id = r.json(t)["job_id"].(string)
		jobs = append(jobs, j)
		open = append(open, j)
		// End a few of the open jobs, some of them twice.
		for len(open) > 0 && rng.IntN(3) > 0 {
			k := rng.IntN(len(open))
			o := open[k]
			end(o, []job.Status{job.Completed, job.Completed, job.Failed, job.Cancelled}[rng.IntN(4)])
			if rng.IntN(5) == 0 {
				end(o, []job.Status{job.Completed, job.Failed, job.Cancelled}[rng.IntN(3)])
			}
			open = append(open[:k], open[k+1:]...)
		}
	}
	if refused == 0 {
		t.Errorf("no creation was refused for want of units (%d made)", made)
	}

	for _, ws := range []string{"ws_a", "ws_b"} {
		usd, units := e.units(ws) // ledger verify: no differences
		if usd != want[ws].usd {
			t.Errorf("%s USD balance %+v; want %+v", ws, usd, want[ws].usd)
		}
		if units != want[ws].units {
			t.Errorf("%s compute units %+v; want %+v", ws, units, want[ws].units)
		}
		entries, err := ledgerdb.New(e.store).LedgerEntries(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		byJob := map[string]*mixJob{}
		for _, j := range jobs {
			byJob[j.id] = j
		}
		for _, en := range entries {
			if j := byJob[en.JobID]; j != nil && en.InUnits() != j.inUnits {
				t.Errorf("job %s (made by a %s) has a ledger entry in the other currency: %+v", j.id, j.creator, en)
			}
		}
	}
	t.Logf("%d jobs made, %d refused for want of units", made, refused)
}
