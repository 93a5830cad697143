package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"genjobs/internal/job"
)

func TestWorkspaceVerify(t *testing.T) {
	e, ctx := newEnv(t), context.Background()
	ws := e.ok(t, "workspace", "create", "--name", "V", "--max-concurrent", "4", "--max-running", "2")["workspace_id"].(string)
	s := e.store()
	now := time.Now()
	var first *job.Job
	for i := 0; i < 3; i++ { // two queued, one backlogged
		j := &job.Job{ID: job.NewID(now), WorkspaceID: ws, CreatedAt: now.Add(time.Duration(i) * time.Millisecond),
			Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid", Request: []byte(`{}`)}
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = j
		}
	}
	if _, err := s.Transition(ctx, first, job.Change{To: job.Cancelled}, now); err != nil {
		t.Fatal(err)
	}
	out := e.ok(t, "workspace", "verify", "--workspace", ws)
	wantKeys(t, out, "workspace_id", "stored", "counted", "differences")
	if got := out["counted"].(map[string]any); got["active"] != 2.0 || got["running"] != 1.0 {
		t.Errorf("counted %v; want 2 active, 1 running", got)
	}

	// A counter knocked off by hand is reported, and the exit status says so.
	e.addToWorkspace(t, ws, "jobs_running", 1)
	r := e.run("workspace", "verify", "--workspace", ws)
	if r.code != 1 || !strings.Contains(r.stderr, "running: counter 2, jobs 1") || !strings.Contains(r.stdout, `"running: counter 2, jobs 1"`) {
		t.Errorf("verify of a wrong counter: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	e.fails(t, 1, "workspace ws_nope does not exist", "workspace", "verify", "--workspace", "ws_nope")
	e.fails(t, 2, "--workspace", "workspace", "verify")
}
