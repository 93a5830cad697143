package store_test

import (
	"context"
	"testing"
	"time"

	"genjobs/internal/job"
)

// JobsByID reads whole jobs (the endpoint and webhook the list's index
// does not hold) in the order asked, over more than one BatchGetItem, and
// leaves out an id that names no job.
func TestJobsByIDReadsWholeJobsInTheOrderAsked(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 200, 5)
	var ids []string
	for i := 0; i < 101; i++ {
		j := newJob("ws_a", t0.Add(time.Duration(i)*time.Second))
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		ids = append([]string{j.ID}, ids...) // newest first, as a list page
	}
	missing := job.NewID(t0.Add(time.Hour))
	asked := append(append(append([]string{}, ids[:50]...), missing), ids[50:]...)
	got, err := s.JobsByID(ctx, asked)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) {
		t.Fatalf("read %d jobs; want the %d that exist", len(got), len(ids))
	}
	for i, j := range got {
		if j.ID != ids[i] || j.Endpoint != "/generate/3d/vendor-g/model-g-3.1-rapid" || j.WebhookURL == "" || j.WorkspaceID != "ws_a" {
			t.Fatalf("job %d: %s %q %q; want %s read whole", i, j.ID, j.Endpoint, j.WebhookURL, ids[i])
		}
	}
	if got, err := s.JobsByID(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("no ids: %d jobs, %v", len(got), err)
	}
}
