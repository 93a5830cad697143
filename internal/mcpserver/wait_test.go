package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/billing/prices"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/mcpserver"
)

// anyToken lets every request in as one workspace: these tests are about
// waiting, the stack's tests about tokens.
type anyToken struct{}

func (anyToken) Authenticate(context.Context, string) (auth.Principal, error) {
	return auth.Principal{WorkspaceID: "ws-wait"}, nil
}

// slowJob plays GET /jobs/{id} of a job that ends at the given read (0:
// never), counting reads.
type slowJob struct {
	mu     sync.Mutex
	reads  int
	endsAt int
}

func (j *slowJob) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	j.reads++
	n := j.reads
	j.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if j.endsAt != 0 && n >= j.endsAt {
		_, _ = w.Write([]byte(`{"job_id":"0193a1f4-0000-7000-8000-000000000001","status":"failed","created_at":"2026-11-26T07:00:00.000Z","completed_at":"2026-11-26T07:00:03.000Z","result":null,"error":{"code":"engine_error","message":"boom"}}`))
		return
	}
	_, _ = w.Write([]byte(`{"job_id":"0193a1f4-0000-7000-8000-000000000001","status":"processing","created_at":"2026-11-26T07:00:00.000Z","completed_at":null,"result":null,"progress":0.5}`))
}

// waitServer serves the MCP handler through the Lambda adapter with a clock
// that only the injected sleep moves: a wait costs no real time, and the
// number of reads shows how the clock bounds it.
func waitServer(t *testing.T, job *slowJob) *httptest.Server {
	t.Helper()
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	list, err := prices.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock.Fixed{T: time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	h, err := mcpserver.New(mcpserver.Config{API: job, Auth: anyToken{}, Catalog: cat, Prices: list, Clock: clk, Poll: 2 * time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			clk.T = clk.T.Add(d)
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(lambdatest.Handler(h))
	t.Cleanup(srv.Close)
	return srv
}

func waitCall(t *testing.T, srv *httptest.Server, args string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait_job","arguments":` + args + `}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer gjs_x")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s %v", resp.StatusCode, out, err)
	}
	return string(out)
}

func TestWaitJobGivesUpAtItsTimeoutOnTheClock(t *testing.T) {
	job := &slowJob{}
	out := waitCall(t, waitServer(t, job), `{"job_id":"0193a1f4-0000-7000-8000-000000000001","timeout_seconds":7}`)
	if !strings.Contains(out, `\"status\":\"processing\"`) || strings.Contains(out, `"isError":true`) {
		t.Errorf("after the timeout: %s; want the record as it stands, processing", out)
	}
	// The first read, then one every 2 s of the clock until 7 s: at 2, 4, 6 and 7.
	if job.reads != 5 {
		t.Errorf("%d reads of the job; want 5 (at 0, 2, 4, 6 and 7 s)", job.reads)
	}
}

func TestWaitJobAnswersAsSoonAsTheJobEnds(t *testing.T) {
	job := &slowJob{endsAt: 3}
	out := waitCall(t, waitServer(t, job), `{"job_id":"0193a1f4-0000-7000-8000-000000000001"}`)
	if !strings.Contains(out, `\"status\":\"failed\"`) || !strings.Contains(out, `engine_error`) {
		t.Errorf("a job that fails: %s; want its failed record with the error", out)
	}
	if job.reads != 3 {
		t.Errorf("%d reads; want 3: it stops at the read that finds the job ended", job.reads)
	}
}

func TestWaitJobRefusesATimeoutOutside1To20(t *testing.T) {
	job := &slowJob{}
	srv := waitServer(t, job)
	for _, args := range []string{`{"job_id":"x","timeout_seconds":0}`, `{"job_id":"x","timeout_seconds":21}`, `{"job_id":"x","timeout_seconds":"5"}`} {
		out := waitCall(t, srv, args)
		if !strings.Contains(out, `"isError":true`) || !strings.Contains(out, "timeout_seconds must be") {
			t.Errorf("%s: %s; want an error naming timeout_seconds", args, out)
		}
	}
	if job.reads != 0 {
		t.Errorf("%d reads for refused calls", job.reads)
	}
}
