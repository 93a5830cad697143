package httpapi_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"genjobs/internal/asset"
	"genjobs/internal/job"
	"genjobs/internal/store/assetsdb"
)

// fakeURLs stands in for S3's presigner: minting a URL is local computation,
// and the blob package's own tests check the real one.
type fakeURLs struct{}

func (fakeURLs) ResultURL(_ context.Context, key string) (string, error) {
	return "https://results.example/" + url.PathEscape(key) + "?X-Amz-Expires=3600&X-Amz-Signature=abc", nil
}

func TestConcurrentLimitAndBacklog(t *testing.T) {
	e := newEnv(t)
	token := e.limitedWorkspace("ws_small", true, 3, 1)
	body := minimal["/generate/3d/vendor-g/model-g-3.1-rapid"]
	var statuses []string
	var ids []string
	for i := 0; i < 3; i++ {
		e.clock.T = now.Add(time.Duration(i) * time.Millisecond) // equal times order by id
		resp := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", token, body)
		if resp.status != 200 {
			t.Fatalf("job %d: %d %s", i, resp.status, resp.body)
		}
		rec := resp.json(t)
		statuses = append(statuses, rec["status"].(string))
		ids = append(ids, rec["job_id"].(string))
	}
	if statuses[0] != "queued" || statuses[1] != "backlogged" || statuses[2] != "backlogged" {
		t.Errorf("statuses %v; want queued, backlogged, backlogged", statuses)
	}
	if q := e.queued(); len(q) != 1 || q[0] != ids[0] {
		t.Errorf("queue holds %v; want only the queued job %s", q, ids[0])
	}

	resp := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", token, body)
	if resp.status != 429 || string(resp.body) != `{"error":"You have reached the maximum number of concurrent jobs."}` {
		t.Errorf("fourth job: %d %s; want 429 with the exact body", resp.status, resp.body)
	}
	page, err := e.store.ListJobs(context.Background(), "ws_small", job.Query{Limit: 10})
	if err != nil || len(page.Jobs) != 3 {
		t.Errorf("the refused request wrote a job: %d jobs, %v", len(page.Jobs), err)
	}

	// Cancelling the running job frees its slot: the oldest backlogged job starts.
	resp = e.do("DELETE", "/jobs/"+ids[0], token, "")
	rec := resp.json(t)
	if resp.status != 200 || rec["status"] != "cancelled" || rec["completed_at"] == nil {
		t.Fatalf("DELETE: %d %s; want 200 with the cancelled record", resp.status, resp.body)
	}
	matchesSchema(t, "Job", resp.body)
	if got := e.do("GET", "/jobs/"+ids[1], token, "").json(t)["status"]; got != "queued" {
		t.Errorf("oldest backlogged job after the cancel: %v; want queued", got)
	}
	if got := e.do("GET", "/jobs/"+ids[2], token, "").json(t)["status"]; got != "backlogged" {
		t.Errorf("newer backlogged job: %v; want still backlogged", got)
	}
	if q := e.queued(); len(q) != 1 || q[0] != ids[1] {
		t.Errorf("queue holds %v; want the promoted job %s", q, ids[1])
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	resp := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", e.tokenA, `{}`)
	id := resp.json(t)["job_id"].(string)

	if r := e.do("DELETE", "/jobs/"+id, e.tokenB, ""); r.status != 404 || string(r.body) != `{"error":"Job not found."}` {
		t.Errorf("another workspace's cancel: %d %s; want 404", r.status, r.body)
	}
	if got := e.do("GET", "/jobs/"+id, e.tokenA, "").json(t)["status"]; got != "queued" {
		t.Fatalf("another workspace's cancel changed the job: %v", got)
	}
	if r := e.do("DELETE", "/jobs/"+id, "", ""); r.status != 401 {
		t.Errorf("cancel without a token: %d", r.status)
	}
	if r := e.do("DELETE", "/jobs/not-a-uuid", e.tokenA, ""); r.status != 404 {
		t.Errorf("cancel of a malformed id: %d", r.status)
	}
	first := e.do("DELETE", "/jobs/"+id, e.tokenA, "")
	if first.status != 200 || first.json(t)["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", first.status, first.body)
	}
	again := e.do("DELETE", "/jobs/"+id, e.tokenA, "")
	if again.status != 409 || string(again.body) != `{"error":"The job has already ended; its status is cancelled."}` {
		t.Errorf("second cancel: %d %s; want 409", again.status, again.body)
	}
	if got := e.do("GET", "/jobs/"+id, e.tokenA, ""); string(got.body) != string(first.body) {
		t.Errorf("GET after cancel %s; want the cancel's record %s", got.body, first.body)
	}
}

func TestAnotherWorkspacesAssetIsRefusedAtCreation(t *testing.T) {
	e := newEnv(t)
	add := func(ws string) string {
		a := asset.Asset{ID: asset.NewID(), WorkspaceID: ws, ContentType: asset.PNG, Size: 10, CreatedAt: now}
		a.Key = asset.Key(ws, a.ID)
		if err := assetsdb.New(e.store).CreateAsset(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		// httptest requests come to example.com; BaseURL is empty, as in AWS.
		return asset.URL("https://example.com", a.ID)
	}
	own, other := add("ws_a"), add("ws_b")
	body := func(ref string) string {
		return `{"width":64,"height":64,"model":"Standard V2","image_url":"` + ref + `"}`
	}
	const path = "/generate/enhance/vendor-a/standard-enhance"
	if r := e.do("POST", path, e.tokenA, body(own)); r.status != 200 {
		t.Errorf("own asset: %d %s", r.status, r.body)
	}
	before := e.itemCount("JOB#")
	for name, ref := range map[string]string{"another workspace's": other, "an unknown": asset.URL("https://example.com", asset.NewID())} {
		r := e.do("POST", path, e.tokenA, body(ref))
		if r.status != 400 || string(r.body) != `{"error":"The request body is invalid: image_url is not an asset of this workspace"}` {
			t.Errorf("%s asset: %d %s", name, r.status, r.body)
		}
	}
	if after := e.itemCount("JOB#"); after != before {
		t.Errorf("refused requests wrote %d jobs", after-before)
	}
}

func TestACompletedJobShowsFreshResultURLs(t *testing.T) {
	e := newEnv(t)
	id := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", e.tokenA, `{}`).json(t)["job_id"].(string)
	j, err := e.store.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	done := 1.0
	if _, err := e.store.Transition(context.Background(), j, job.Change{To: job.Completed, Progress: &done, Outputs: []string{"results/" + id + "/0.glb"}}, now); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/jobs/" + id, "/jobs"} {
		resp := e.do("GET", path, e.tokenA, "")
		want := `"result":{"urls":["https://results.example/results%2F` + id + `%2F0.glb?X-Amz-Expires=3600&X-Amz-Signature=abc"]}`
		if resp.status != 200 || !strings.Contains(string(resp.body), want) {
			t.Errorf("GET %s: %d %s; want %s", path, resp.status, resp.body, want)
		}
	}
}
