package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/asset"
	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/webhook"
)

const (
	imageEndpoint = "/generate/image/vendor-b/model-e-4"
	meshEndpoint  = "/generate/3d/vendor-g/model-g-3.1-rapid"
)

// storedJob writes a job straight to the table, as a creation does but
// with no message to a queue: it stays queued until cancelled.
func storedJob(t testing.TB, s *devstacktest.Stack, ws, endpoint, source, personID, by string, at time.Time) *job.Job {
	t.Helper()
	j := &job.Job{ID: job.NewID(at), WorkspaceID: ws, Status: job.Queued, CreatedAt: at, Endpoint: endpoint,
		Request: []byte(`{"prompt":"a lighthouse"}`), Source: source, PersonID: personID, CreatedBy: by, Price: 40_000}
	if err := s.Store.CreateJob(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	return j
}

func listed(p page, id string) bool { return strings.Contains(p.body, `<tr id="job-`+id+`"`) }

// TestJobsPageFiltersByEndpointSourceAndPerson: each filter, and two
// together, list exactly the workspace's jobs that pass it; a person's
// name in a row links to their jobs.
func TestJobsPageFiltersByEndpointSourceAndPerson(t *testing.T) {
	s, b := signedIn(t, member.Member)
	me := person(t, s, "maker@example.com", devstack.DemoWorkspace, member.Member)
	now := time.Now().Add(-time.Hour)
	api := storedJob(t, s, devstack.DemoWorkspace, imageEndpoint, job.SourceAPI, "", "demo", now)
	app := storedJob(t, s, devstack.DemoWorkspace, meshEndpoint, job.SourceApp, me, "maker@example.com", now.Add(time.Second))
	mcp := storedJob(t, s, devstack.DemoWorkspace, imageEndpoint, job.SourceMCP, me, "maker@example.com", now.Add(2*time.Second))
	s.Workspace(t, "ws_other", 5*devstacktest.USD, 10, 10)
	theirs := storedJob(t, s, "ws_other", imageEndpoint, job.SourceApp, me, "maker@example.com", now.Add(3*time.Second))
	for _, c := range []struct {
		query string
		want  []*job.Job
	}{
		{"", []*job.Job{api, app, mcp}},
		{"endpoint=" + url.QueryEscape(imageEndpoint), []*job.Job{api, mcp}},
		{"endpoint=" + url.QueryEscape(meshEndpoint), []*job.Job{app}},
		{"source=api", []*job.Job{api}},
		{"source=app", []*job.Job{app}},
		{"source=mcp", []*job.Job{mcp}},
		{"person=" + me, []*job.Job{app, mcp}},
		{"person=" + me + "&endpoint=" + url.QueryEscape(imageEndpoint), []*job.Job{mcp}},
		{"source=mcp&status=cancelled", nil},
	} {
		p := b.get("/app/jobs?" + c.query)
		if p.status != http.StatusOK {
			t.Fatalf("/app/jobs?%s: %d\n%s", c.query, p.status, p.body)
		}
		for _, j := range []*job.Job{api, app, mcp, theirs} {
			want := false
			for _, w := range c.want {
				want = want || w == j
			}
			if listed(p, j.ID) != want {
				t.Errorf("/app/jobs?%s lists %s (%s, %s): %v; want %v", c.query, j.ID, j.Source, j.Endpoint, !want, want)
			}
		}
	}
	p := b.get("/app/jobs")
	if !strings.Contains(p.body, `<a href="/app/jobs?person=`+me+`">maker@example.com</a>`) {
		t.Error("a person's row does not link to their jobs")
	}
	if !strings.Contains(b.get("/app/jobs?source=app").body, `<option value="app" selected>`) {
		t.Error("the source select does not show the filter")
	}
}

// TestJobsPageRefusesFiltersThatDoNotParse: an unknown endpoint, source or
// status, a person filter that is no id, and cursors that do not parse or
// belong to another filter are 400 pages that say so.
func TestJobsPageRefusesFiltersThatDoNotParse(t *testing.T) {
	s := devstacktest.Start(t)
	s.Workspace(t, "ws_many", 5*devstacktest.USD, 100, 5) // room for 51 jobs not yet ended
	person(t, s, "many@example.com", "ws_many", member.Member)
	b := newBrowser(t, s)
	b.signIn("many@example.com", password)
	now := time.Now().Add(-time.Hour)
	for i := 0; i < 51; i++ {
		storedJob(t, s, "ws_many", imageEndpoint, job.SourceAPI, "", "demo", now.Add(time.Duration(i)*time.Second))
	}
	first := b.get("/app/jobs?source=api")
	next := between(first.body, `href="/app/jobs?cursor=`, `&amp;`)
	if next == "" {
		t.Fatalf("no next page link:\n%s", between(first.body, `id="jobs"`, "</section>"))
	}
	for q, says := range map[string]string{
		"endpoint=not-an-endpoint":          "There is no endpoint not-an-endpoint",
		"source=web":                        "There is no job source web",
		"status=done":                       "There is no job status done.",
		"person=" + url.QueryEscape("a b<"): "The person filter is not a person",
		"cursor=" + next + "&source=mcp":    "not valid for this workspace and filter",
		"cursor=" + next:                    "not valid for this workspace and filter",
		"cursor=%25%25":                     "not valid for this workspace and filter",
		"source=api&cursor=" + next + "x":   "not valid for this workspace and filter",
	} {
		p := b.get("/app/jobs?" + q)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, says) {
			t.Errorf("/app/jobs?%s: %d; want 400 saying %q\n%s", q, p.status, says, between(p.body, "<main", "</main>"))
		}
	}
	if p := b.get("/app/jobs?source=api&cursor=" + next); p.status != http.StatusOK || strings.Count(p.body, `<tr id="job-`) != 1 {
		t.Errorf("the next page of source=api: %d, %d rows", p.status, strings.Count(p.body, `<tr id="job-`))
	}
}

type pollAnswer struct {
	Jobs []struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Running bool   `json:"running"`
		Cost    string `json:"cost"`
	} `json:"jobs"`
	Error string `json:"error"`
}

func (b *browser) poll(ids ...string) (int, pollAnswer) {
	b.t.Helper()
	p := b.get("/app/jobs/poll?ids=" + strings.Join(ids, ","))
	var a pollAnswer
	if err := json.Unmarshal([]byte(p.body), &a); err != nil {
		b.t.Fatalf("poll: %d %q: %v", p.status, p.body, err)
	}
	return p.status, a
}

// TestPollAnswersOnlyTheWorkspacesNamedJobs: the poll route answers the
// jobs it names of the signed-in workspace, running or ended; another
// workspace's job is left out exactly as an id that names no job; bad
// ids are a 400 that says so.
func TestPollAnswersOnlyTheWorkspacesNamedJobs(t *testing.T) {
	s, b := signedIn(t, member.Member)
	// Made now: the sweeper fails a queued job it has waited an hour for,
	// and the poll's answer must find these still queued.
	now := time.Now()
	running := storedJob(t, s, devstack.DemoWorkspace, imageEndpoint, job.SourceAPI, "", "demo", now)
	unnamed := storedJob(t, s, devstack.DemoWorkspace, imageEndpoint, job.SourceAPI, "", "demo", now.Add(time.Second))
	s.Workspace(t, "ws_other", 5*devstacktest.USD, 10, 10)
	theirs := storedJob(t, s, "ws_other", imageEndpoint, job.SourceAPI, "", "test", now)
	unknown := job.NewID(now)
	status, a := b.poll(running.ID, theirs.ID, unknown)
	if status != http.StatusOK || len(a.Jobs) != 1 || a.Jobs[0].ID != running.ID || a.Jobs[0].Status != "queued" || !a.Jobs[0].Running ||
		a.Jobs[0].Cost != "$0.04 held" {
		t.Errorf("poll: %d %+v; want the workspace's one named job, queued, $0.04 held", status, a)
	}
	for _, j := range a.Jobs {
		if j.ID == unnamed.ID || j.ID == theirs.ID {
			t.Errorf("poll answered %s, which it was not asked for or is not the workspace's", j.ID)
		}
	}
	for _, q := range [][]string{{"not-a-job"}, {""}, make([]string, 51)} {
		if q[0] == "" && len(q) == 51 {
			for i := range q {
				q[i] = running.ID
			}
		}
		if status, a := b.poll(q...); status != http.StatusBadRequest || a.Error == "" {
			t.Errorf("poll %d ids (%.20q): %d %+v; want a 400 that says why", len(q), q[0], status, a)
		}
	}
	// The list's running row names the poll route and loads the script.
	p := b.get("/app/jobs")
	if !strings.Contains(p.body, `data-poll="/app/jobs/poll"`) || !strings.Contains(p.body, `data-job="`+running.ID+`" data-status="queued" data-running`) ||
		!strings.Contains(p.body, `<script src="/app/assets/jobs.js?v=`) {
		t.Error("the list does not mark its running rows for the script")
	}
}

// TestCancelFromTheJobPageChargesNothing: "Cancel" on a running job's page
// ends it cancelled; neither its USD nor its compute units are charged,
// and the hold comes back.
func TestCancelFromTheJobPageChargesNothing(t *testing.T) {
	s, b := signedIn(t, member.Member)
	ctx, ws := context.Background(), devstack.DemoWorkspace
	acc := accountsdb.New(s.Store)
	if _, err := acc.SetPlan(ctx, ws, 1000, time.Now()); err != nil {
		t.Fatal(err)
	}
	usdBefore, err := acc.Balance(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	cuBefore, _, err := acc.Units(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Minute)
	usdJob := storedJob(t, s, ws, imageEndpoint, job.SourceAPI, "", "demo", now)
	cuJob := &job.Job{ID: job.NewID(now), WorkspaceID: ws, Status: job.Queued, CreatedAt: now, Endpoint: imageEndpoint,
		Request: []byte(`{"prompt":"x"}`), Source: job.SourceApp, PersonID: "someone", CreatedBy: "member@example.com",
		Price: 40_000, Currency: billing.CurrencyCU, Units: 4}
	if err := s.Store.CreateJob(ctx, cuJob); err != nil {
		t.Fatal(err)
	}
	for _, j := range []*job.Job{usdJob, cuJob} {
		page := b.get("/app/jobs/" + j.ID)
		if !strings.Contains(page.body, `id="job-cancel"`) {
			t.Fatalf("the running job's page has no Cancel")
		}
		p := b.post("/app/jobs/"+j.ID+"/cancel", b.form(ws))
		if p.status != http.StatusSeeOther {
			t.Fatalf("cancel %s: %d\n%s", j.ID, p.status, p.body)
		}
		after := b.get(p.location)
		if !strings.Contains(after.body, `id="job-status" data-cell="state">cancelled<`) || strings.Contains(after.body, `id="job-cancel"`) ||
			!strings.Contains(after.body, "Nothing is charged for it.") {
			t.Errorf("after Cancel, the page of %s: %s", j.ID, between(after.body, `class="stats"`, "</section>"))
		}
		if again := b.post("/app/jobs/"+j.ID+"/cancel", b.form(ws)); again.status != http.StatusConflict {
			t.Errorf("a second Cancel: %d; want 409", again.status)
		}
	}
	if !strings.Contains(b.get("/app/jobs/"+cuJob.ID).body, `id="job-charged" data-cell="charged">0 CU<`) ||
		!strings.Contains(b.get("/app/jobs/"+usdJob.ID).body, `id="job-charged" data-cell="charged">$0.00<`) {
		t.Error("a cancelled job's page does not show 0 charged")
	}
	usdAfter, _ := acc.Balance(ctx, ws)
	cuAfter, _, _ := acc.Units(ctx, ws)
	if usdAfter != usdBefore || cuAfter != cuBefore {
		t.Errorf("after cancelling both: USD %+v (was %+v), CU %+v (was %+v); want both as before", usdAfter, usdBefore, cuAfter, cuBefore)
	}
}

// TestDeliverAgainAndRoutesAreForOwnersAndAdmins: a member sees neither
// "Deliver again" nor a job's route, and a member's POST is refused with
// nothing changed; an admin sees both, and "Deliver again" makes the
// delivery's next attempt due now.
func TestDeliverAgainAndRoutesAreForOwnersAndAdmins(t *testing.T) {
	s, memberBrowser := signedIn(t, member.Member)
	person(t, s, "admin@example.com", devstack.DemoWorkspace, member.Admin)
	admin := newBrowser(t, s)
	admin.signIn("admin@example.com", password)
	ctx, ws := context.Background(), devstack.DemoWorkspace
	j := &job.Job{ID: job.NewID(time.Now()), WorkspaceID: ws, Status: job.Queued, CreatedAt: time.Now(), Endpoint: imageEndpoint,
		Request: []byte(`{"prompt":"x"}`), Source: job.SourceAPI, CreatedBy: "demo", Price: 40_000,
		Provider: "replicate", RouteModel: "acme/secret-model"}
	if err := s.Store.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	dels := deliveriesdb.New(s.Store)
	if _, err := dels.CreateDelivery(ctx, &webhook.Delivery{JobID: j.ID, WorkspaceID: ws, ID: webhook.NewID(), URL: "https://receiver.invalid/hook",
		State: webhook.Failed, NextAt: time.Now(), CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	mp := memberBrowser.get("/app/jobs/" + j.ID)
	if mp.status != http.StatusOK || strings.Contains(mp.body, "Deliver again") || strings.Contains(mp.body, "secret-model") ||
		strings.Contains(mp.body, "replicate") || strings.Contains(mp.body, `id="job-route"`) {
		t.Errorf("a member's job page shows the route or Deliver again (%d)", mp.status)
	}
	if p := memberBrowser.post("/app/jobs/"+j.ID+"/deliver-again", memberBrowser.form(ws)); p.status != http.StatusForbidden {
		t.Errorf("a member's Deliver again: %d; want 403", p.status)
	}
	if d, _ := dels.Delivery(ctx, j.ID); d.State != webhook.Failed {
		t.Errorf("after a member's refused Deliver again the delivery is %s; want failed, untouched", d.State)
	}
	ap := admin.get("/app/jobs/" + j.ID)
	if !strings.Contains(ap.body, `id="job-deliver-again"`) || !strings.Contains(ap.body, `id="job-route">replicate:acme/secret-model<`) {
		t.Errorf("an admin's job page lacks Deliver again or the route")
	}
	p := admin.post("/app/jobs/"+j.ID+"/deliver-again", admin.form(ws))
	if p.status != http.StatusSeeOther {
		t.Fatalf("an admin's Deliver again: %d\n%s", p.status, p.body)
	}
	if d, _ := dels.Delivery(ctx, j.ID); d.State == webhook.Failed && len(d.Attempts) == 0 {
		t.Errorf("after Deliver again the delivery is still failed with no attempt")
	}
}

// TestJobPageShowsInputImages: a job's image inputs are shown, an https
// URL and an image data URI as they are, an uploaded asset by a presigned
// URL of the assets bucket under the job's workspace; other fields are not.
func TestJobPageShowsInputImages(t *testing.T) {
	s, b := signedIn(t, member.Member)
	ws, at := devstack.DemoWorkspace, time.Now()
	assetID := asset.NewID()
	j := &job.Job{ID: job.NewID(at), WorkspaceID: ws, Status: job.Queued, CreatedAt: at, Endpoint: "/generate/video/vendor-b/model-b-fast",
		Request: []byte(`{"prompt":"https://not.an.image/x.png","start_image":"https://images.example/start.png","end_image":"` + s.URL + `/assets/` + assetID + `",` +
			`"reference_images":["data:image/png;base64,iVBORw0KGgo="]}`),
		Source: job.SourceAPI, CreatedBy: "demo", Price: 40_000}
	if err := s.Store.CreateJob(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	p := b.get("/app/jobs/" + j.ID)
	inputs := html.UnescapeString(between(p.body, `id="job-inputs"`, `</div>`))
	for _, want := range []string{`<img src="https://images.example/start.png" alt="Input start_image"`, `<img src="data:image/png;base64,iVBORw0KGgo=" alt="Input reference_images[0]"`,
		"/assets/" + ws + "/" + assetID + "?X-Amz-"} {
		if !strings.Contains(inputs, want) {
			t.Errorf("the job page's inputs lack %q:\n%s", want, inputs)
		}
	}
	if strings.Contains(inputs, "not.an.image") {
		t.Error("the prompt is shown as an input image")
	}
}
