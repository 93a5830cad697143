package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/member"
)

// createImageJob makes a small image job with token through the API and
// returns its id.
func createImageJob(t testing.TB, s *devstacktest.Stack, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/generate/image/vendor-b/model-e-4", strings.NewReader(`{"prompt":"a lighthouse","width":64,"height":64}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		ID string `json:"job_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusOK || body.ID == "" {
		t.Fatalf("create an image job: %d", resp.StatusCode)
	}
	return body.ID
}

// jobPrice is the job's price as GET /jobs/{id}/details says it.
func jobPrice(t testing.TB, s *devstacktest.Stack, id string) (currency, price string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/jobs/"+id+"/details", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		Billing struct {
			Currency string `json:"currency"`
			Price    string `json:"price"`
		} `json:"billing"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /jobs/%s/details: %d %v", id, resp.StatusCode, err)
	}
	return d.Billing.Currency, d.Billing.Price
}

// TestJobsPagesShowAnAPIJob makes an image job with the API token, then
// reads /app/jobs and the job's page as a member: the row names its
// source "api" and the token, its USD cost, and a preview; the job page
// shows the output image, which the browser can load under the CSP.
func TestJobsPagesShowAnAPIJob(t *testing.T) {
	s, b := signedIn(t, member.Member)
	id := createImageJob(t, s, s.Token)
	waitEnded(t, s, id)
	currency, price := jobPrice(t, s, id)
	usd, err := billing.ParseUSD(price)
	if currency != "usd" || err != nil || usd <= 0 {
		t.Fatalf("details: %s %s; want a USD price", currency, price)
	}

	list := b.get("/app/jobs")
	if list.status != http.StatusOK {
		t.Fatalf("/app/jobs: %d\n%s", list.status, list.body)
	}
	row := between(list.body, `<tr id="job-`+id+`"`, "</tr>")
	if row == "" {
		t.Fatalf("/app/jobs has no row for %s", id)
	}
	for _, want := range []string{">completed<", "/generate/image/vendor-b/model-e-4", ">api · demo<", ">$" + usd.Dollars() + "<", `<img src="`, `data-cell="duration">`} {
		if !strings.Contains(row, want) {
			t.Errorf("the job's row lacks %q:\n%s", want, row)
		}
	}
	if !strings.Contains(list.body, `href="/app/jobs" aria-current="page">Jobs</a>`) {
		t.Error("the tabs have no current Jobs tab")
	}

	p := b.get("/app/jobs/" + id)
	if p.status != http.StatusOK {
		t.Fatalf("/app/jobs/%s: %d\n%s", id, p.status, p.body)
	}
	outputs := between(p.body, `id="job-outputs"`, "</div>")
	src := html.UnescapeString(between(outputs, `<img src="`, `"`))
	if src == "" {
		t.Fatalf("the job page shows no output image:\n%s", outputs)
	}
	for _, want := range []string{`id="job-cost">$` + usd.Dollars() + "<", `id="job-source">api · demo<`, "a lighthouse"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the job page lacks %q", want)
		}
	}
	// The image is the output, fetchable, from the origin the CSP names.
	resp, err := http.Get(src)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(data), "\x89PNG") {
		t.Errorf("the output image: %d, %d bytes", resp.StatusCode, len(data))
	}
	u, _ := url.Parse(src)
	origin := u.Scheme + "://" + u.Host
	csp := cspOf(t, s, b, "/app/jobs/"+id)
	// Images also from https: and data: (style covers, QR codes); videos
	// from the results store alone.
	if got := strings.TrimSpace(between(csp, "img-src", ";")); got != "'self' https: data: "+origin {
		t.Errorf("CSP img-src %q; want 'self' https: data: and the results' origin %s", got, origin)
	}
	if got := strings.TrimSpace(between(csp, "media-src", ";")); got != "'self' "+origin {
		t.Errorf("CSP media-src %q; want 'self' and the results' origin %s alone", got, origin)
	}
}

// cspOf is the Content-Security-Policy of a console page.
func cspOf(t testing.TB, s *devstacktest.Stack, b *browser, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("Content-Security-Policy")
}

// TestJobPageOfAnotherWorkspaceIsNotFound: the workspace's own job has its
// page; another workspace's job is the same 404 page as an id that names
// no job, and is not listed.
func TestJobPageOfAnotherWorkspaceIsNotFound(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	other := s.Workspace(t, "ws_other", 5*devstacktest.USD, 10, 10)
	theirs, mine := createImageJob(t, s, other), createImageJob(t, s, s.Token)
	if p := b.get("/app/jobs/" + mine); p.status != http.StatusOK || !strings.Contains(p.body, mine) {
		t.Fatalf("the workspace's own job: %d", p.status)
	}
	unknown := b.get("/app/jobs/00000000-0000-4000-8000-000000000000")
	p := b.get("/app/jobs/" + theirs)
	if p.status != http.StatusNotFound || unknown.status != http.StatusNotFound || p.body != unknown.body {
		t.Errorf("another workspace's job: %d; an unknown job: %d; want the same 404 page", p.status, unknown.status)
	}
	if strings.Contains(b.get("/app/jobs").body, theirs) {
		t.Error("/app/jobs lists another workspace's job")
	}
}

// TestJobsPageRefusesABadCursor: a cursor that does not parse, or another
// filter's, is a 400 page saying so, and an unknown status too.
func TestJobsPageRefusesABadCursor(t *testing.T) {
	_, b := signedIn(t, member.Member)
	for _, q := range []string{"cursor=not-a-cursor", "cursor=" + url.QueryEscape(strings.Repeat("x", 600)), "cursor=", "status=nope"} {
		p := b.get("/app/jobs?" + q)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "not valid") && !strings.Contains(p.body, "no job status") {
			t.Errorf("/app/jobs?%s: %d\n%s", q, p.status, p.body)
		}
	}
}

// TestJobsPagesFilterByStatus: the status select narrows the list.
func TestJobsPagesFilterByStatus(t *testing.T) {
	s, b := signedIn(t, member.Admin)
	id := createImageJob(t, s, s.Token)
	waitEnded(t, s, id)
	if p := b.get("/app/jobs?status=completed"); p.status != http.StatusOK || !strings.Contains(p.body, `id="job-`+id+`"`) ||
		!strings.Contains(p.body, `<option value="completed" selected>`) {
		t.Errorf("completed: %d, row %v", p.status, strings.Contains(p.body, id))
	}
	if p := b.get("/app/jobs?status=failed"); p.status != http.StatusOK || strings.Contains(p.body, id) {
		t.Errorf("failed: %d, lists the completed job %v", p.status, strings.Contains(p.body, id))
	}
}

// TestJobsPageGoesBackFiftyAtATime: 51 jobs are a page of 50 with a link
// to older jobs, whose page holds the oldest; its cursor under another
// filter is a 400 page.
func TestJobsPageGoesBackFiftyAtATime(t *testing.T) {
	s := devstacktest.Start(t)
	s.Workspace(t, "ws_many", 0, 100, 5) // room for 51 jobs not yet ended
	person(t, s, "many@example.com", "ws_many", member.Member)
	b := newBrowser(t, s)
	b.signIn("many@example.com", password)
	ctx, now := context.Background(), time.Now().Add(-time.Hour)
	var oldest string
	for i := 0; i < 51; i++ {
		at := now.Add(time.Duration(i) * time.Second)
		j := &job.Job{ID: job.NewID(at), WorkspaceID: "ws_many", Status: job.Queued, CreatedAt: at,
			Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid", Request: []byte(`{"prompt":"x"}`), Source: job.SourceAPI}
		if err := s.Store.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			oldest = j.ID
		}
	}
	first := b.get("/app/jobs")
	next := html.UnescapeString(between(first.body, `<a class="button small quiet" href="`, `" id="jobs-next"`))
	if n := strings.Count(first.body, `<tr id="job-`); first.status != http.StatusOK || n != 50 || !strings.HasPrefix(next, "/app/jobs?cursor=") {
		t.Fatalf("the first page: %d, %d rows, next %q; want 50 rows and a link to older jobs", first.status, n, next)
	}
	if strings.Contains(first.body, oldest) {
		t.Error("the first page holds the oldest job")
	}
	second := b.get(next)
	if n := strings.Count(second.body, `<tr id="job-`); second.status != http.StatusOK || n != 1 || !strings.Contains(second.body, `<tr id="job-`+oldest+`"`) ||
		strings.Contains(second.body, `id="jobs-next"`) {
		t.Errorf("the second page: %d, %d rows; want the oldest job alone and no further link", second.status, n)
	}
	if p := b.get(next + "&status=failed"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "not valid for this workspace and filter") {
		t.Errorf("the cursor under another filter: %d", p.status)
	}
}
