package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"genjobs/internal/job"
)

// dataURI is a PNG's data URI well over the 64 characters details show.
var dataURI = "data:image/png;base64," + base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 120)...))

func TestJobDetailsSayWhatWasAskedByWhomAndWhatItCost(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	body := `{"prompt":"a <sign> & a cat","width":512,"height":512,"style_images":["` + dataURI + `"]}`
	r := e.do("POST", modelE, e.tokenA, body)
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := r.json(t)["job_id"].(string)

	r = e.do("GET", "/jobs/"+id+"/details", e.tokenA, "")
	if r.status != 200 {
		t.Fatalf("details: %d %s", r.status, r.body)
	}
	matchesSchema(t, "JobDetails", r.body)
	d := r.json(t)
	if d["job_id"] != id || d["endpoint"] != modelE || d["source"] != "api" || d["created_by"] != "ci of ws_a" || d["route"] != "reference" {
		t.Errorf("details of an API job: %s", r.body)
	}
	if d["started_at"] != nil || d["ended_at"] != nil {
		t.Errorf("a queued job's started_at and ended_at: %v, %v; want null", d["started_at"], d["ended_at"])
	}
	b := d["billing"].(map[string]any)
	if b["currency"] != "usd" || b["price"] != "0.030000" || b["charged"] != nil {
		t.Errorf("billing of a queued API job: %v; want usd 0.030000, charged null", b)
	}
	in := d["input"].(map[string]any)
	shown := in["style_images"].([]any)[0].(string)
	if shown != dataURI[:64] || in["prompt"] != "a <sign> & a cat" || in["seed"] == nil {
		t.Errorf("input: %v; want the data URI cut to %q, the prompt as sent, defaults filled", in, dataURI[:64])
	}
	if !bytes.Contains(r.body, []byte(`"a <sign> & a cat"`)) {
		t.Errorf("the prompt is escaped in %s", r.body)
	}

	// It runs and completes: started, ended, charged.
	j := e.storedJob(id)
	start := now.Add(2 * time.Second)
	if j, _ = e.store.Transition(ctx, j, job.Change{To: job.Processing}, start); j == nil || j.Status != job.Processing {
		t.Fatalf("processing: %+v", j)
	}
	if _, err := e.store.Transition(ctx, j, job.Change{To: job.Completed}, start.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	d = e.do("GET", "/jobs/"+id+"/details", e.tokenA, "").json(t)
	if d["started_at"] != "2026-11-21T20:33:02.120Z" || d["ended_at"] != "2026-11-21T20:33:03.120Z" {
		t.Errorf("a completed job's started_at %v, ended_at %v", d["started_at"], d["ended_at"])
	}
	if b := d["billing"].(map[string]any); b["charged"] != "0.030000" {
		t.Errorf("a completed job's charge: %v", b)
	}

	// Another workspace's token, an unknown id and a malformed one: the
	// same 404 as GET /jobs/{id}.
	want := e.do("GET", "/jobs/"+id, e.tokenB, "")
	if want.status != 404 {
		t.Fatalf("GET /jobs/{id} of another workspace: %d", want.status)
	}
	for _, path := range []string{"/jobs/" + id + "/details", "/jobs/" + job.NewID(now) + "/details", "/jobs/not-a-job/details"} {
		r := e.do("GET", path, e.tokenB, "")
		if r.status != 404 || string(r.body) != string(want.body) {
			t.Errorf("%s with another workspace's token: %d %s; want %d %s", path, r.status, r.body, want.status, want.body)
		}
	}
	if r := e.do("GET", "/jobs/"+id+"/details", "", ""); r.status != 401 {
		t.Errorf("details without a token: %d", r.status)
	}
}

func TestDetailsOfAnApplicationJobAreInComputeUnits(t *testing.T) {
	e := newEnv(t)
	e.plan("ws_a", 10)
	r := e.inProcess(person("ws_a", job.SourceApp), "POST", modelE, "", minimal[modelE])
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := r.json(t)["job_id"].(string)
	if r := e.inProcess(person("ws_a", job.SourceApp), "DELETE", "/jobs/"+id, "", ""); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	// The workspace's API token reads it too.
	r = e.do("GET", "/jobs/"+id+"/details", e.tokenA, "")
	matchesSchema(t, "JobDetails", r.body)
	d := r.json(t)
	b := d["billing"].(map[string]any)
	if d["source"] != "app" || d["created_by"] != "ada@ws_a.example" || b["currency"] != "cu" || b["price"] != "3" || b["charged"] != "0" {
		t.Errorf("details of a cancelled application job: %s", r.body)
	}
	if d["started_at"] != nil || !strings.HasPrefix(d["ended_at"].(string), "2026-11-21T") {
		t.Errorf("a job cancelled while queued: started_at %v, ended_at %v", d["started_at"], d["ended_at"])
	}
}
