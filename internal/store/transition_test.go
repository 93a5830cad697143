package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/slotsdb"
)

// checkSlots fails the test when the workspace's counters disagree with its jobs.
func checkSlots(t *testing.T, s *store.Store, ws string) slotsdb.Slots {
	t.Helper()
	ctx := context.Background()
	stored, err := slotsdb.New(s).StoredSlots(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	counted, err := slotsdb.New(s).CountSlots(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if stored != counted {
		t.Errorf("%s: counters say %+v; its jobs say %+v", ws, stored, counted)
	}
	return stored
}

func TestCreationTakesSlotsThenBacklogsThenRefuses(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 4, 2)
	var got []job.Status
	for i := 0; i < 4; i++ {
		j := newJob("ws_a", t0.Add(time.Duration(i)*time.Second))
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		got = append(got, j.Status)
		stored, _ := s.Job(ctx, j.ID)
		if stored.Status != j.Status {
			t.Errorf("job %d stored as %s; creation said %s", i, stored.Status, j.Status)
		}
		if (j.Status == job.Queued) != (stored.QueuedAt != nil) {
			t.Errorf("job %d (%s) queued_at = %v", i, j.Status, stored.QueuedAt)
		}
	}
	if want := []job.Status{job.Queued, job.Queued, job.Backlogged, job.Backlogged}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses %v; want %v", got, want)
	}
	refused := newJob("ws_a", t0.Add(time.Minute))
	if err := s.CreateJob(ctx, refused); !errors.Is(err, job.ErrTooManyJobs) {
		t.Fatalf("fifth job: %v; want ErrTooManyJobs", err)
	}
	if _, err := s.Job(ctx, refused.ID); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("a refused creation wrote its job: %v", err)
	}
	if n := checkSlots(t, s, "ws_a"); n != (slotsdb.Slots{Active: 4, Running: 2}) {
		t.Errorf("slots %+v; want 4 active, 2 running", n)
	}
	if err := s.CreateJob(ctx, newJob("ws_missing", t0)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("job of a missing workspace: %v; want ErrNotFound", err)
	}
}

func TestNewJobWaitsBehindTheBacklog(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 10, 1)
	first, second := newJob("ws_a", t0), newJob("ws_a", t0.Add(time.Second))
	for _, j := range []*job.Job{first, second} {
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	// The running job ends: a slot is free, but the backlogged job is first in line.
	if _, err := s.Transition(ctx, first, job.Change{To: job.Failed, Error: &job.Error{Code: job.CodeEngineError}}, t0); err != nil {
		t.Fatal(err)
	}
	third := newJob("ws_a", t0.Add(2*time.Second))
	if err := s.CreateJob(ctx, third); err != nil {
		t.Fatal(err)
	}
	if third.Status != job.Backlogged {
		t.Errorf("a new job jumped the backlog: %s", third.Status)
	}
	backlog, err := s.Backlog(ctx, "ws_a", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(backlog) != 2 || backlog[0].ID != second.ID || backlog[1].ID != third.ID {
		t.Fatalf("backlog %v; want [%s %s] oldest first", ids(backlog), second.ID, third.ID)
	}
	if _, err := s.Transition(ctx, backlog[0], job.Change{To: job.Queued}, t0.Add(3*time.Second)); err != nil {
		t.Fatalf("promotion: %v", err)
	}
	if _, err := s.Transition(ctx, backlog[1], job.Change{To: job.Queued}, t0.Add(3*time.Second)); !errors.Is(err, job.ErrNoRunningSlot) {
		t.Errorf("second promotion with the one slot taken: %v; want ErrNoRunningSlot", err)
	}
	promoted, _ := s.Job(ctx, second.ID)
	if promoted.Status != job.Queued || promoted.QueuedAt == nil || !promoted.QueuedAt.Equal(t0.Add(3*time.Second)) {
		t.Errorf("promoted job: %s, queued at %v", promoted.Status, promoted.QueuedAt)
	}
	checkSlots(t, s, "ws_a")
}

func ids(js []*job.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// jobIn creates a job of a fresh workspace (one running slot) and brings it
// to status st the way the service would.
func jobIn(t *testing.T, s *store.Store, ws string, st job.Status) *job.Job {
	t.Helper()
	ctx := context.Background()
	addWorkspace(t, s, ws, 5, 1)
	if st == job.Backlogged {
		if err := s.CreateJob(ctx, newJob(ws, t0)); err != nil { // takes the slot
			t.Fatal(err)
		}
	}
	j := newJob(ws, t0.Add(time.Second))
	if err := s.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if j.Status == st {
		return j
	}
	c := job.Change{To: st}
	if st == job.Failed {
		c.Error = &job.Error{Code: job.CodeEngineError, Message: "x"}
	}
	next, err := s.Transition(ctx, j, c, t0.Add(2*time.Second))
	if err != nil {
		t.Fatalf("bring a job to %s: %v", st, err)
	}
	return next
}

// TestTransitionPrimitiveOnEveryPair runs every pair of statuses through the
// store: the stored job decides, exactly as job.Status.CanMoveTo says, and the
// slot counters stay exact whatever happens.
func TestTransitionPrimitiveOnEveryPair(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, from := range job.Statuses {
		for k, to := range job.Statuses {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				ws := fmt.Sprintf("ws_%d_%d", i, k)
				j := jobIn(t, s, ws, from)
				c := job.Change{To: to}
				if to == job.Failed {
					c.Error = &job.Error{Code: job.CodeEngineError}
				}
				got, err := s.Transition(ctx, j, c, t0.Add(time.Minute))
				sameStatusProgress := from == to && !to.Terminal()
				switch {
				case from == job.Backlogged && to == job.Queued:
					// jobIn's first job holds the one running slot.
					if !errors.Is(err, job.ErrNoRunningSlot) {
						t.Errorf("promotion without a free slot: %v; want ErrNoRunningSlot", err)
					}
				case from.CanMoveTo(to) || sameStatusProgress:
					if err != nil || got.Status != to {
						t.Errorf("%s -> %s: %v (now %v); want it allowed", from, to, err, got)
					}
					if to.Terminal() && (got.CompletedAt == nil || !got.CompletedAt.Equal(t0.Add(time.Minute))) {
						t.Errorf("%s -> %s: completed_at %v", from, to, got.CompletedAt)
					}
				default:
					if !errors.Is(err, job.ErrConflict) || got == nil || got.Status != from {
						t.Errorf("%s -> %s: %v (now %v); want ErrConflict and the job left %s", from, to, err, got, from)
					}
				}
				checkSlots(t, s, ws)
			}()
		}
	}
	wg.Wait()
}

func TestLeaseKeepsOtherWorkersOut(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	j := jobIn(t, s, "ws_a", job.Queued)
	a := job.Lease{ID: "lease-a", Until: t0.Add(time.Minute)}
	claimed, err := s.Transition(ctx, j, job.Change{To: job.Scheduled, Lease: &a}, t0)
	if err != nil || claimed.Lease != a || claimed.Attempts != 1 {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	b := job.Lease{ID: "lease-b", Until: t0.Add(2 * time.Minute)}
	if _, err := s.Transition(ctx, j, job.Change{To: job.Scheduled, Lease: &b}, t0.Add(30*time.Second)); !errors.Is(err, job.ErrConflict) {
		t.Errorf("a second claim while the lease holds: %v; want ErrConflict", err)
	}
	// A holds and renews.
	p := 0.2
	renewed := job.Lease{ID: "lease-a", Until: t0.Add(90 * time.Second)}
	if _, err := s.Transition(ctx, j, job.Change{To: job.Sampling, Progress: &p, Holder: "lease-a", Lease: &renewed}, t0.Add(40*time.Second)); err != nil {
		t.Fatalf("holder's progress write: %v", err)
	}
	// A crashes; after its lease ends, B takes the job over and A's writes fail.
	taken, err := s.Transition(ctx, j, job.Change{To: job.Sampling, Lease: &b}, t0.Add(91*time.Second))
	if err != nil || taken.Lease.ID != "lease-b" || taken.Attempts != 2 {
		t.Fatalf("take-over after expiry: %+v, %v", taken, err)
	}
	done := 1.0
	if _, err := s.Transition(ctx, j, job.Change{To: job.Completed, Progress: &done, Holder: "lease-a"}, t0.Add(92*time.Second)); !errors.Is(err, job.ErrConflict) {
		t.Errorf("the old holder completed the job: %v", err)
	}
	final, err := s.Transition(ctx, j, job.Change{To: job.Completed, Progress: &done, Outputs: []string{"results/x/0.glb"}, Holder: "lease-b"}, t0.Add(93*time.Second))
	if err != nil || final.Status != job.Completed || len(final.Outputs) != 1 || final.Lease.ID != "" {
		t.Fatalf("holder's completion: %+v, %v", final, err)
	}
	checkSlots(t, s, "ws_a")
}

func TestProgressNeverGoesDown(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	j := jobIn(t, s, "ws_a", job.Sampling)
	hi, lo := 0.6, 0.4
	if _, err := s.Transition(ctx, j, job.Change{To: job.Sampling, Progress: &hi}, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.Transition(ctx, j, job.Change{To: job.Sampling, Progress: &lo}, t0)
	if !errors.Is(err, job.ErrConflict) || *got.Progress != hi {
		t.Errorf("progress 0.6 -> 0.4: %v, stored %v", err, got.Progress)
	}
}

func TestCancelledJobIsNeverCompleted(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	j := jobIn(t, s, "ws_a", job.Processing)
	// Both writers race from the same read of the job.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, to := range []job.Status{job.Cancelled, job.Completed} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Transition(ctx, j, job.Change{To: to}, t0)
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("cancel: %v, complete: %v; want exactly one to win", errs[0], errs[1])
	}
	final, _ := s.Job(ctx, j.ID)
	if errs[0] == nil && final.Status != job.Cancelled || errs[1] == nil && final.Status != job.Completed {
		t.Errorf("winner's status not kept: %s", final.Status)
	}
	if n := checkSlots(t, s, "ws_a"); n != (slotsdb.Slots{}) {
		t.Errorf("slots after the end: %+v", n)
	}
}

func TestFilteredListReadsABoundedNumberOfJobs(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	store.SetListScan(s, 5)
	addWorkspace(t, s, "ws_a", 20, 20)
	var rare *job.Job
	for i := 0; i < 12; i++ {
		j := newJob("ws_a", t0.Add(time.Duration(i)*time.Second))
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			rare = j
		}
	}
	if _, err := s.Transition(ctx, rare, job.Change{To: job.Cancelled}, t0); err != nil {
		t.Fatal(err)
	}
	// The cancelled job is the oldest: pages come back empty with a cursor
	// until the walk reaches it.
	var found []string
	cursor, pages := "", 0
	for {
		page, err := s.ListJobs(ctx, "ws_a", job.Query{Limit: 10, Status: job.Cancelled, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		found = append(found, ids(page.Jobs)...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(found) != 1 || found[0] != rare.ID || pages != 3 {
		t.Errorf("found %v over %d pages; want [%s] over 3 pages of at most 5 reads", found, pages, rare.ID)
	}
}

// A hand-over records the job's new lane with the holder's release of its
// lease, in one write: after it, any other worker may claim the job, and
// a re-send goes to the new lane. A writer who no longer holds the lease
// records nothing.
func TestAHandOverRecordsTheNewLaneAndFreesTheJob(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	addWorkspace(t, s, "ws_a", 5, 1)
	j := newJob("ws_a", t0)
	j.Lane = "light"
	if err := s.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	light := job.Lease{ID: "lease-light", Until: t0.Add(time.Minute)}
	if _, err := s.Transition(ctx, j, job.Change{To: job.Processing, Lease: &light}, t0); err != nil {
		t.Fatal(err)
	}
	// Another writer's hand-over is refused and changes nothing.
	stale := job.Lease{ID: "lease-old", Until: t0}
	if _, err := s.Transition(ctx, j, job.Change{To: job.Processing, Holder: "lease-old", Lease: &stale, Lane: "heavy"}, t0.Add(time.Second)); !errors.Is(err, job.ErrConflict) {
		t.Errorf("a hand-over without the lease: %v; want ErrConflict", err)
	}
	if got, _ := s.Job(ctx, j.ID); got.Lane != "light" {
		t.Errorf("a refused hand-over moved the job to lane %q", got.Lane)
	}

	gone := job.Lease{ID: "lease-light", Until: t0.Add(time.Second)}
	handed, err := s.Transition(ctx, j, job.Change{To: job.Processing, Holder: "lease-light", Lease: &gone, Lane: "heavy"}, t0.Add(2*time.Second))
	if err != nil || handed.Lane != "heavy" || handed.Status != job.Processing {
		t.Fatalf("hand-over: %+v, %v; want processing on the heavy lane", handed, err)
	}
	if got, _ := s.Job(ctx, j.ID); got.Lane != "heavy" || got.Lease.Held(t0.Add(2*time.Second)) {
		t.Errorf("stored after the hand-over: lane %q, lease %+v; want heavy and free", got.Lane, got.Lease)
	}
	// The heavy worker claims it at once; its own writes keep the lane.
	heavy := job.Lease{ID: "lease-heavy", Until: t0.Add(time.Minute)}
	claimed, err := s.Transition(ctx, j, job.Change{To: job.Processing, Lease: &heavy}, t0.Add(3*time.Second))
	if err != nil || claimed.Lane != "heavy" || claimed.Attempts != 2 {
		t.Fatalf("the heavy worker's claim: %+v, %v", claimed, err)
	}
	checkSlots(t, s, "ws_a")
}
