package httpapi_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"genjobs/internal/billing"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
)

const (
	modelE  = "/generate/image/vendor-b/model-e-4" // 0.03 USD: 3 CU at 100 CU a USD
	noUnits = `{"error":"Your workspace has run out of compute units."}`
)

// inProcess sends a request to the routes as an in-process caller does
// (the playground, an OAuth MCP connection): no token, the Origin on the
// request's context.
func (e *env) inProcess(o httpapi.Origin, method, path, token, body string) response {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req = req.WithContext(httpapi.WithOrigin(req.Context(), o))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.inproc.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return response{rec.Code, rec.Result().Header, b}
}

func person(ws, source string) httpapi.Origin {
	return httpapi.Origin{Source: source, Person: &httpapi.Person{WorkspaceID: ws, UserID: "usr_" + ws, Email: "ada@" + ws + ".example"}}
}

// units audits a workspace's ledger (no differences allowed) and returns
// both balances.
func (e *env) units(ws string) (billing.Balance, billing.UnitBalance) {
	e.t.Helper()
	a, err := ledgerdb.New(e.store).AuditLedger(context.Background(), ws)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range a.Differences {
		e.t.Errorf("ledger verify of %s: %s", ws, d)
	}
	return a.Stored, a.StoredUnits
}

func (e *env) plan(ws string, units billing.Units) {
	e.t.Helper()
	if _, err := accountsdb.New(e.store).SetPlan(context.Background(), ws, units, now); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) storedJob(id string) *job.Job {
	e.t.Helper()
	j, err := e.store.Job(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

func TestAppCreationsAreHeldAndSettledInComputeUnits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.plan("ws_a", 10)
	usdBefore, _ := e.units("ws_a")

	// The application makes three jobs: one completes, one is cancelled
	// by the person, one fails.
	var ids []string
	for _, source := range []string{job.SourceApp, job.SourceMCP, job.SourceApp} {
		r := e.inProcess(person("ws_a", source), "POST", modelE, "", minimal[modelE])
		if r.status != 200 {
			t.Fatalf("in-process creation: %d %s", r.status, r.body)
		}
		ids = append(ids, r.json(t)["job_id"].(string))
	}
	if _, u := e.units("ws_a"); u.Available != 1 || u.Reserved != 9 {
		t.Errorf("after three creations: %+v; want 3 CU held by each", u)
	}
	j := e.storedJob(ids[0])
	if j.Currency != billing.CurrencyCU || j.Units != 3 || j.Source != job.SourceApp ||
		j.CreatedBy != "ada@ws_a.example" || j.PersonID != "usr_ws_a" {
		t.Errorf("the job's billing and origin: currency %q, units %d, source %q, by %q (%q)", j.Currency, j.Units, j.Source, j.CreatedBy, j.PersonID)
	}
	if s := e.storedJob(ids[1]).Source; s != job.SourceMCP {
		t.Errorf("an OAuth MCP creation's source is %q; want mcp", s)
	}
	if _, err := e.store.Transition(ctx, j, job.Change{To: job.Completed}, now); err != nil {
		t.Fatal(err)
	}
	if r := e.inProcess(person("ws_a", job.SourceApp), "DELETE", "/jobs/"+ids[1], "", ""); r.status != 200 {
		t.Fatalf("cancel as the person: %d %s", r.status, r.body)
	}
	if _, err := e.store.Transition(ctx, e.storedJob(ids[2]), job.Change{To: job.Failed, Error: &job.Error{Code: job.CodeEngineError}}, now); err != nil {
		t.Fatal(err)
	}
	usd, u := e.units("ws_a")
	if u != (billing.UnitBalance{Available: 7, Spent: 3}) {
		t.Errorf("after one completion, a cancellation and a failure: %+v; want 7 available, 3 spent", u)
	}
	if usd != usdBefore {
		t.Errorf("the API balance moved for application jobs: %+v, was %+v", usd, usdBefore)
	}
	// The USD ledger has no entry of these jobs.
	entries, err := ledgerdb.New(e.store).LedgerEntries(ctx, "ws_a")
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if en.JobID != "" && !en.InUnits() {
			t.Errorf("a USD ledger entry for an application job: %+v", en)
		}
	}
	// Another workspace's person cannot see the job.
	if r := e.inProcess(person("ws_b", job.SourceApp), "GET", "/jobs/"+ids[0], "", ""); r.status != 404 {
		t.Errorf("another workspace's person reading the job: %d", r.status)
	}
}

func TestOutOfComputeUnitsIs402AndNeverUsesTheAPIBalance(t *testing.T) {
	e := newEnv(t)
	e.plan("ws_a", 2)
	usdBefore, unitsBefore := e.units("ws_a")
	jobsBefore := e.itemCount("JOB#")
	for _, o := range []httpapi.Origin{person("ws_a", job.SourceApp), person("ws_a", job.SourceMCP)} {
		r := e.inProcess(o, "POST", modelE, "", minimal[modelE])
		if r.status != 402 || string(r.body) != noUnits {
			t.Errorf("a creation beyond the units: %d %s; want 402 %s", r.status, r.body, noUnits)
		}
	}
	if n := e.itemCount("JOB#"); n != jobsBefore {
		t.Errorf("%d jobs stored by refused creations", n-jobsBefore)
	}
	if usd, u := e.units("ws_a"); usd != usdBefore || u != unitsBefore {
		t.Errorf("refused creations moved the balances: %+v %+v; were %+v %+v", usd, u, usdBefore, unitsBefore)
	}
	// The API token still works, in USD.
	if r := e.do("POST", modelE, e.tokenA, minimal[modelE]); r.status != 200 {
		t.Errorf("an API creation with units gone: %d %s", r.status, r.body)
	}
}

func TestTokensAreBilledInUSDWhateverTheySend(t *testing.T) {
	e := newEnv(t)
	e.plan("ws_a", 10)
	usdBefore, _ := e.units("ws_a")
	// Through the Lambda adapter, as API Gateway delivers it: nothing a
	// client sends selects compute units.
	r := e.do("POST", modelE, e.tokenA, minimal[modelE], "X-Billing-Currency", "cu", "X-Source", "app", "X-Person", "usr_ws_a")
	if r.status != 200 {
		t.Fatalf("API creation: %d %s", r.status, r.body)
	}
	j := e.storedJob(r.json(t)["job_id"].(string))
	if j.Currency != billing.CurrencyUSD || j.Source != job.SourceAPI || j.CreatedBy != "ci of ws_a" || j.PersonID != "" {
		t.Errorf("an API token's job: currency %q, source %q, by %q (%q)", j.Currency, j.Source, j.CreatedBy, j.PersonID)
	}
	// MCP with a token: source mcp, still USD.
	r = e.inProcess(httpapi.Origin{Source: job.SourceMCP}, "POST", modelE, e.tokenA, minimal[modelE])
	if r.status != 200 {
		t.Fatalf("MCP creation with a token: %d %s", r.status, r.body)
	}
	if j := e.storedJob(r.json(t)["job_id"].(string)); j.Currency != billing.CurrencyUSD || j.Source != job.SourceMCP {
		t.Errorf("an MCP token job: currency %q, source %q", j.Currency, j.Source)
	}
	usd, u := e.units("ws_a")
	if u != (billing.UnitBalance{Available: 10}) {
		t.Errorf("API token jobs moved compute units: %+v", u)
	}
	if usd.Reserved-usdBefore.Reserved != 60_000 {
		t.Errorf("API token jobs reserved %s USD; want 0.06", usd.Reserved-usdBefore.Reserved)
	}
}
