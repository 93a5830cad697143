package httpapi_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/webhook"
)

const (
	rapid       = "/generate/3d/vendor-g/model-g-3.1-rapid" // 0.10 USD a job
	noCredits   = `{"error":"You have run out of credits.","message":"The API balance is separate from the workspace compute balance; top it up in the application's billing settings."}`
	tooManyJobs = `{"error":"You have reached the maximum number of concurrent jobs."}`
)

// parallel sends n requests at once and returns the answers.
func (e *env) parallel(n int, method, path, token, body string, headers ...string) []response {
	out := make([]response, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = e.do(method, path, token, body, headers...)
		}()
	}
	wg.Wait()
	return out
}

func (e *env) audit(ws string) billing.Balance {
	e.t.Helper()
	a, err := ledgerdb.New(e.store).AuditLedger(context.Background(), ws)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range a.Differences {
		e.t.Errorf("%s: %s", ws, d)
	}
	return a.Stored
}

func TestOutOfCreditsIs402AndWritesNothing(t *testing.T) {
	e := newEnv(t)
	token := e.fundedWorkspace("ws_poor", true, 100, 100, 1_100_000) // exactly 11 jobs
	jobsBefore := e.itemCount("JOB#")
	counts := map[int]int{}
	for _, r := range e.parallel(40, "POST", rapid, token, `{}`) {
		counts[r.status]++
		if r.status == 402 && string(r.body) != noCredits {
			t.Errorf("402 body: %s", r.body)
		}
	}
	if counts[200] != 11 || counts[402] != 29 {
		t.Errorf("answers %v; want 11 x 200 and 29 x 402", counts)
	}
	if n := e.itemCount("JOB#") - jobsBefore; n != 11 {
		t.Errorf("%d jobs stored; want 11", n)
	}
	if b := e.audit("ws_poor"); b.Available != 0 || b.Reserved != 1_100_000 {
		t.Errorf("balance %+v; want everything reserved, nothing below zero", b)
	}
}

func TestConcurrentLimitUnderParallelCreations(t *testing.T) {
	e := newEnv(t)
	token := e.limitedWorkspace("ws_two", true, 2, 2)
	counts := map[int]int{}
	for _, r := range e.parallel(6, "POST", rapid, token, `{}`) {
		counts[r.status]++
		if r.status == 429 && string(r.body) != tooManyJobs {
			t.Errorf("429 body: %s", r.body)
		}
	}
	if counts[200] != 2 || counts[429] != 4 {
		t.Errorf("answers %v; want 2 x 200 and 4 x 429", counts)
	}
	e.audit("ws_two")
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	body := `{"prompt":"a cat"}`
	path := "/generate/video/vendor-c/model-c"
	jobsBefore := e.itemCount("JOB#")
	ids := map[string]int{}
	replays := 0
	for _, r := range e.parallel(20, "POST", path, e.tokenA, body, "Idempotency-Key", "order-7") {
		switch r.status {
		case 200:
			ids[r.json(t)["job_id"].(string)]++
			if r.header.Get("Idempotent-Replayed") == "true" {
				replays++
			}
		case 409:
			if r.errorText(t) != "A request with this Idempotency-Key is in progress; retry shortly." {
				t.Errorf("409 body: %s", r.body)
			}
		default:
			t.Errorf("%d %s", r.status, r.body)
		}
	}
	if len(ids) != 1 || replays == 0 {
		t.Fatalf("job ids %v, %d replays; want one job and the rest replays of it", ids, replays)
	}
	if n := e.itemCount("JOB#") - jobsBefore; n != 1 {
		t.Errorf("%d jobs stored; want 1", n)
	}
	if b := e.audit("ws_a"); b.Reserved != 250_000 {
		t.Errorf("reserved %s; want one model-c job of 5 s (0.25 USD)", b.Reserved)
	}

	// The same request spelled differently is the same request (defaults filled).
	e.clock.T = now.Add(time.Hour)
	r := e.do("POST", path, e.tokenA, `{"duration":5, "prompt":"a cat"}`, "Idempotency-Key", "order-7")
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" || ids[r.json(t)["job_id"].(string)] == 0 {
		t.Errorf("replay an hour later: %d %v %s", r.status, r.header, r.body)
	}
	for _, other := range []struct{ path, body string }{
		{path, `{"prompt":"a dog"}`},
		{"/generate/video/vendor-d/model-d-flash-1.1", body},
	} {
		r := e.do("POST", other.path, e.tokenA, other.body, "Idempotency-Key", "order-7")
		if r.status != 422 || string(r.body) != `{"error":"This Idempotency-Key was used with a different request."}` {
			t.Errorf("same key, other request %s %s: %d %s", other.path, other.body, r.status, r.body)
		}
	}
	// Another workspace's key of the same name is its own.
	if r := e.do("POST", path, e.tokenB, body, "Idempotency-Key", "order-7"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("workspace B with A's key: %d %v", r.status, r.header)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "é"} {
		r := e.do("POST", path, e.tokenA, body, "Idempotency-Key", bad)
		if r.status != 400 || !strings.HasPrefix(r.errorText(t), "The request headers are invalid: Idempotency-Key must") {
			t.Errorf("key %q: %d %s", bad, r.status, r.body)
		}
	}
	if n := e.itemCount("JOB#") - jobsBefore; n != 2 {
		t.Errorf("%d jobs stored; want 2 (one per workspace)", n)
	}
}

func TestRefusedCreationDoesNotKeepTheKey(t *testing.T) {
	e := newEnv(t)
	token := e.fundedWorkspace("ws_poor", true, 100, 100, 0)
	if r := e.do("POST", rapid, token, `{}`, "Idempotency-Key", "k1"); r.status != 402 {
		t.Fatalf("no balance: %d %s", r.status, r.body)
	}
	if _, err := accountsdb.New(e.store).TopUp(context.Background(), "ws_poor", "pay_1", 5*billing.USD, now); err != nil {
		t.Fatal(err)
	}
	if r := e.do("POST", rapid, token, `{}`, "Idempotency-Key", "k1"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry after a top-up: %d %v %s; want a new job", r.status, r.header, r.body)
	}
}

func TestUsage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Jobs on two days; the one that failed is not billed.
	complete := func(path, body string, at time.Time, to job.Status) {
		t.Helper()
		e.clock.T = at
		r := e.do("POST", path, e.tokenA, body)
		if r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		j, err := e.store.Job(ctx, r.json(t)["job_id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		c := job.Change{To: to}
		if to == job.Failed {
			c.Error = &job.Error{Code: job.CodeEngineError, Message: "x"}
		}
		if _, err := e.store.Transition(ctx, j, c, at.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	day1 := time.Date(2026, 11, 19, 10, 0, 0, 0, time.UTC)
	day3 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	complete(rapid, `{}`, day1, job.Completed)
	complete("/generate/video/vendor-c/model-c", `{"prompt":"x","duration":2}`, day3, job.Completed)
	complete(rapid, `{}`, day3, job.Completed)
	complete(rapid, `{}`, day3, job.Failed)
	// Another workspace's usage is not ours.
	e.do("POST", rapid, e.tokenB, `{}`)

	e.clock.T = now // 2026-11-21T20:33
	r := e.do("GET", "/usage?days=3", e.tokenA, "")
	want := `{"from":"2026-11-19T00:00:00.000Z","to":"2026-11-21T20:33:00.120Z","total_usd":"0.300000",` +
		`"by_day":[{"date":"2026-11-19","usd":"0.100000","jobs":1},{"date":"2026-11-20","usd":"0.000000","jobs":0},{"date":"2026-11-21","usd":"0.200000","jobs":2}],` +
		`"by_model":[{"path":"/generate/3d/vendor-g/model-g-3.1-rapid","usd":"0.200000","jobs":2},{"path":"/generate/video/vendor-c/model-c","usd":"0.100000","jobs":1}]}`
	if r.status != 200 || string(r.body) != want {
		t.Errorf("GET /usage?days=3:\n%d %s\nwant\n%s", r.status, r.body, want)
	}
	matchesSchema(t, "Usage", r.body)
	// One day is today only; the default is seven.
	if r := e.do("GET", "/usage?days=1", e.tokenA, ""); !strings.Contains(string(r.body), `"total_usd":"0.200000"`) {
		t.Errorf("days=1: %s", r.body)
	}
	var week struct {
		ByDay []any `json:"by_day"`
	}
	if r := e.do("GET", "/usage", e.tokenA, ""); r.status != 200 || json.Unmarshal(r.body, &week) != nil || len(week.ByDay) != 7 {
		t.Errorf("default window: %d %s", r.status, r.body)
	}
	for q, msg := range map[string]string{
		"?days=0":        "days must be an integer between 1 and 90",
		"?days=91":       "days must be an integer between 1 and 90",
		"?days=1.5":      "days must be an integer between 1 and 90",
		"?days=2&days=3": "days is given more than once",
		"?from=x&days=2": "from is not a known query parameter",
	} {
		r := e.do("GET", "/usage"+q, e.tokenA, "")
		if r.status != 400 || r.errorText(t) != "The query is invalid: "+msg {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	if r := e.do("GET", "/usage", "", ""); r.status != 401 {
		t.Errorf("no token: %d", r.status)
	}
}

func TestDeliveries(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r := e.do("POST", rapid, e.tokenA, `{}`, "X-Webhook-URL", "https://hooks.example.com/in")
	id := r.json(t)["job_id"].(string)
	if r := e.do("GET", "/jobs/"+id+"/deliveries", e.tokenA, ""); r.status != 200 || string(r.body) != `{"items":[]}` {
		t.Errorf("before the end: %d %s", r.status, r.body)
	}
	at := time.Date(2026, 11, 21, 20, 40, 0, 0, time.UTC)
	if _, err := deliveriesdb.New(e.store).CreateDelivery(ctx, &webhook.Delivery{JobID: id, WorkspaceID: "ws_a", ID: "whk_1", URL: "https://hooks.example.com/in",
		State: webhook.Pending, NextAt: at, CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	next := at.Add(5 * time.Second)
	for i, a := range []webhook.Attempt{
		{Number: 1, At: at, EndedAt: at.Add(1500 * time.Millisecond), StatusCode: 503, Error: "the receiver answered 503", NextAt: &next},
		{Number: 2, At: next, StatusCode: 204},
	} {
		state := webhook.Pending
		if i == 1 {
			state = webhook.Succeeded
		}
		if err := deliveriesdb.New(e.store).ClaimAttempt(ctx, id, a.Number, "msg-"+strconv.Itoa(a.Number), a.At.Add(time.Minute), a.At); err != nil {
			t.Fatal(err)
		}
		if err := deliveriesdb.New(e.store).RecordAttempt(ctx, id, "msg-"+strconv.Itoa(a.Number), a, state, next); err != nil {
			t.Fatal(err)
		}
	}
	r = e.do("GET", "/jobs/"+id+"/deliveries", e.tokenA, "")
	want := `{"items":[{"attempt":1,"at":"2026-11-21T20:40:00.000Z","duration_ms":1500,"status_code":503,"error":"the receiver answered 503","next_attempt_at":"2026-11-21T20:40:05.000Z"},` +
		`{"attempt":2,"at":"2026-11-21T20:40:05.000Z","duration_ms":null,"status_code":204,"error":null,"next_attempt_at":null}]}`
	if r.status != 200 || string(r.body) != want {
		t.Errorf("deliveries:\n%d %s\nwant\n%s", r.status, r.body, want)
	}
	matchesSchema(t, "DeliveryList", r.body)
	if r := e.do("GET", "/jobs/"+id+"/deliveries", e.tokenB, ""); r.status != 404 || r.errorText(t) != "Job not found." {
		t.Errorf("another workspace: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/jobs/not-an-id/deliveries", e.tokenA, ""); r.status != 404 {
		t.Errorf("bad id: %d", r.status)
	}
}
