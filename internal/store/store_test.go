package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)

func newStore(t *testing.T) *store.Store {
	t.Helper()
	db := testenv.DynamoDB(t)
	name := testenv.UniqueName(t, "tbl")
	if err := schema.CreateTable(context.Background(), db, name); err != nil {
		t.Fatal(err)
	}
	return store.New(db, name)
}

// addWorkspace creates a workspace with the given slot limits.
func addWorkspace(t *testing.T, s *store.Store, id string, maxConcurrent, maxRunning int) {
	t.Helper()
	err := accountsdb.New(s).CreateWorkspace(context.Background(), auth.Workspace{ID: id, Name: id, APIEnabled: true,
		MaxConcurrent: maxConcurrent, MaxRunning: maxRunning, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
}

func newJob(ws string, at time.Time) *job.Job {
	return &job.Job{
		ID: job.NewID(at), WorkspaceID: ws, Status: job.Queued, CreatedAt: at,
		Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid", Request: []byte(`{"prompt":"x"}`),
		WebhookURL: "https://example.com/hook",
	}
}

func TestJobRoundTrip(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 20, 5)
	j := newJob("ws_a", t0.Add(123*time.Millisecond))
	if err := s.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	got, err := s.Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != j.ID || got.WorkspaceID != "ws_a" || got.Status != job.Queued || !got.CreatedAt.Equal(j.CreatedAt) ||
		got.Endpoint != j.Endpoint || got.WebhookURL != j.WebhookURL {
		t.Errorf("read back %+v; wrote %+v", got, j)
	}
	if req, err := s.JobRequest(ctx, j.ID); err != nil || string(req) != `{"prompt":"x"}` {
		t.Errorf("request read back %s, %v; wrote %s", req, err, j.Request)
	}
	if err := s.CreateJob(ctx, j); !errors.Is(err, store.ErrExists) {
		t.Errorf("creating the same job twice: %v; want ErrExists", err)
	}
	if _, err := s.Job(ctx, job.NewID(t0)); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("unknown job: %v; want job.ErrNotFound", err)
	}
}

func TestListJobsFollowsPagesNewestFirst(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	store.SetPageSize(s, 3) // many DynamoDB pages per list page
	addWorkspace(t, s, "ws_a", 20, 6)
	addWorkspace(t, s, "ws_b", 20, 5)
	var ids []string
	for i := 0; i < 11; i++ { // 6 queued, then 5 backlogged
		j := newJob("ws_a", t0.Add(time.Duration(i)*time.Second))
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if err := s.CreateJob(ctx, newJob("ws_b", t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}

	var got []string
	cursor := ""
	pages := 0
	for {
		page, err := s.ListJobs(ctx, "ws_a", job.Query{Limit: 4, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	var want []string
	for i := len(ids) - 1; i >= 0; i-- {
		want = append(want, ids[i])
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || pages != 3 {
		t.Errorf("listed %d jobs over %d pages:\n%v\nwant newest first over 3 pages:\n%v", len(got), pages, got, want)
	}

	// A status filter drops items after DynamoDB's limit: pages must still fill up.
	page, err := s.ListJobs(ctx, "ws_a", job.Query{Limit: 6, Status: job.Backlogged})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 5 || page.NextCursor != "" {
		t.Fatalf("backlogged page: %d jobs, cursor %q; want all 5 and no cursor", len(page.Jobs), page.NextCursor)
	}
	for _, j := range page.Jobs {
		if j.Status != job.Backlogged {
			t.Errorf("status filter let %s through", j.Status)
		}
	}
}

func TestCursorIsBoundToWorkspaceAndQuery(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 20, 5)
	for i := 0; i < 3; i++ {
		if err := s.CreateJob(ctx, newJob("ws_a", t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.ListJobs(ctx, "ws_a", job.Query{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page: %v, cursor %q", err, page.NextCursor)
	}
	for name, q := range map[string]struct {
		ws string
		q  job.Query
	}{
		"other workspace": {"ws_b", job.Query{Limit: 1, Cursor: page.NextCursor}},
		"other status":    {"ws_a", job.Query{Limit: 1, Cursor: page.NextCursor, Status: job.Queued}},
		"garbage":         {"ws_a", job.Query{Limit: 1, Cursor: "not-a-cursor"}},
		"truncated":       {"ws_a", job.Query{Limit: 1, Cursor: page.NextCursor[:len(page.NextCursor)-3]}},
	} {
		if _, err := s.ListJobs(ctx, q.ws, q.q); !errors.Is(err, job.ErrBadCursor) {
			t.Errorf("%s: %v; want ErrBadCursor", name, err)
		}
	}
}
