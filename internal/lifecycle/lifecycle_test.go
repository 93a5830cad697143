package lifecycle_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"genjobs/internal/auth"
	"genjobs/internal/clock"
	"genjobs/internal/job"
	"genjobs/internal/lifecycle"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/slotsdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRandomisedRunKeepsSlotsExact creates, promotes, runs, completes, fails
// and cancels jobs of three workspaces from several goroutines at once, in a
// random order, and then recounts: the counters must match the jobs, no
// workspace may ever run more than max_running, and every job must be able
// to end.
func TestRandomisedRunKeepsSlotsExact(t *testing.T) {
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "life")
	if err := schema.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	s := store.New(db, table)
	sq := testenv.SQS(t)
	url, _, err := queue.Create(ctx, sq, testenv.UniqueName(t, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	c := clock.System{}
	life := &lifecycle.Ender{Store: s, Queue: queue.NewJobSender(sq, url), Clock: c, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	workspaces := []string{"ws_a", "ws_b", "ws_c"}
	for _, ws := range workspaces {
		if err := accountsdb.New(s).CreateWorkspace(ctx, auth.Workspace{ID: ws, MaxConcurrent: 8, MaxRunning: 3, CreatedAt: c.Now()}); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var created []string
	tooMany := 0
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for i := 0; i < 40; i++ {
				ws := workspaces[rng.IntN(len(workspaces))]
				mu.Lock()
				pick := ""
				if len(created) > 0 {
					pick = created[rng.IntN(len(created))]
				}
				mu.Unlock()
				switch op := rng.IntN(5); {
				case op <= 1 || pick == "": // create
					j := &job.Job{ID: job.NewID(c.Now()), WorkspaceID: ws, CreatedAt: c.Now(),
						Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid", Request: []byte(`{}`)}
					err := s.CreateJob(ctx, j)
					if errors.Is(err, job.ErrTooManyJobs) {
						mu.Lock()
						tooMany++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					created = append(created, j.ID)
					mu.Unlock()
				default: // move a job on: run, complete, fail or cancel
					j, err := s.Job(ctx, pick)
					if err != nil {
						t.Error(err)
						return
					}
					var change job.Change
					switch op {
					case 2:
						change = job.Change{To: job.Processing}
					case 3:
						change = job.Change{To: []job.Status{job.Completed, job.Failed}[rng.IntN(2)], Error: &job.Error{Code: job.CodeEngineError}}
					case 4:
						change = job.Change{To: job.Cancelled}
					}
					if change.To.Terminal() {
						_, err = life.End(ctx, j, change)
					} else {
						_, err = s.Transition(ctx, j, change, c.Now())
					}
					if err != nil && !errors.Is(err, job.ErrConflict) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()

	for _, ws := range workspaces {
		stored, err := slotsdb.New(s).StoredSlots(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		counted, err := slotsdb.New(s).CountSlots(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if stored != counted {
			t.Errorf("%s: counters %+v; its jobs %+v", ws, stored, counted)
		}
		if stored.Running > 3 || stored.Active > 8 {
			t.Errorf("%s: %+v is over its limits (8 active, 3 running)", ws, stored)
		}
	}
	if tooMany == 0 {
		t.Error("no creation met the concurrent limit: the run did not exercise 429")
	}

	// Every job can end, and then every slot is free.
	for _, id := range created {
		j, err := s.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !j.Status.Terminal() {
			if _, err := life.Cancel(ctx, j); err != nil && !errors.Is(err, job.ErrConflict) {
				t.Fatal(err)
			}
		}
	}
	for _, ws := range workspaces {
		if n, _ := slotsdb.New(s).StoredSlots(ctx, ws); n != (slotsdb.Slots{}) {
			t.Errorf("%s: slots %+v after every job ended; want none", ws, n)
		}
	}
}
