package provider_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"genjobs/internal/job"
	"genjobs/internal/provider"
	"genjobs/internal/provider/providertest"
)

// delays is the provider queue recording the wait of each step a chain
// schedules; it sends the step at once, since the test moves the clock.
type delays struct {
	provider.Queue
	mu  sync.Mutex
	got []time.Duration
}

func (d *delays) Schedule(ctx context.Context, m provider.Message, delay time.Duration) error {
	d.mu.Lock()
	d.got = append(d.got, delay)
	d.mu.Unlock()
	return d.Queue.Schedule(ctx, m, 0)
}

func (d *delays) last(t *testing.T) time.Duration {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) == 0 {
		t.Fatal("no step was scheduled")
	}
	return d.got[len(d.got)-1]
}

func recordDelays(e *env) *delays {
	d := &delays{Queue: e.runner.Queue}
	e.runner.Queue = d
	return d
}

// TestSubmissionRetriedAfterItsRetryAfter: a submission answered 503 with
// Retry-After: 1 is submitted again one second later, not after the minute
// a submission whose answer was lost is given.
func TestSubmissionRetriedAfterItsRetryAfter(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	e.runner.InFlight = time.Minute
	d := recordDelays(e)
	e.rep.FailNext(providertest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1", Body: `{"detail":"busy"}`})
	j := e.create(imageEndpoint, fox)
	e.step()
	if got := d.last(t); got != time.Second {
		t.Fatalf("the submission answered 503 with Retry-After: 1 is retried in %s; want 1s", got)
	}
	e.clock.T = e.clock.T.Add(time.Second)
	e.step()
	if e.rep.Creates() != 1 {
		t.Fatalf("%d predictions one second after the 503; want the submission sent again (next wait %s)", e.rep.Creates(), d.last(t))
	}
	p := e.rep.Only(t)
	out := e.files.Put("/out/ra.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.rep.Set(p.ID, "succeeded", "", out, "")
	if got := e.steps(j.ID, 3); got.Status != job.Completed || e.rep.Creates() != 1 {
		t.Fatalf("job %s after %d predictions; want completed after 1", got.Status, e.rep.Creates())
	}
}

// TestRetryAfterBounded: a provider asking for an hour is asked again after
// MaxRetryAfter (the route's deadline, two hours, is further off).
func TestRetryAfterBounded(t *testing.T) {
	e := newEnv(t, func(e *env) string {
		return strings.Replace(replicateRoutes(e), `"deadline_minutes": 5`, `"deadline_minutes": 120`, 1)
	})
	d := recordDelays(e)
	e.rep.FailNext(providertest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "3600", Body: `{"detail":"throttled"}`})
	e.create(imageEndpoint, fox)
	e.step()
	if got := d.last(t); got != provider.MaxRetryAfter {
		t.Fatalf("a Retry-After of an hour is waited %s; want it bounded to %s", got, provider.MaxRetryAfter)
	}
}

// TestCopyRetriesBackOff: an output whose bytes stop midway is fetched
// again after waits that double with each failed copy (5 s, 10 s, 20 s
// ...), not every 5 s.
func TestCopyRetriesBackOff(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	e.runner.RetryBase, e.runner.MaxPoll = 5*time.Second, 5*time.Minute
	d := recordDelays(e)
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	p := e.rep.Only(t)
	data := []byte(strings.Repeat("0123456789", 30_000))
	url := e.files.Put("/out/cut.mp4", providertest.File{ContentType: "video/mp4", Data: data, StopAfter: 100_000})
	e.rep.Set(p.ID, "succeeded", "", url, "")
	var waits []time.Duration
	for range 5 {
		if got := e.steps(j.ID, 1); got.Status.Terminal() {
			t.Fatalf("job %s %+v after a copy that broke off; want it retried", got.Status, got.Error)
		}
		w := d.last(t)
		waits = append(waits, w)
		e.clock.T = e.clock.T.Add(w)
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits between copies %v; want %v", waits, want)
		}
	}
	// Once whole, the output is copied and the job completes.
	e.files.Put("/out/cut.mp4", providertest.File{ContentType: "video/mp4", Data: data, ClaimLength: true})
	if got := e.steps(j.ID, 2); got.Status != job.Completed {
		t.Fatalf("job %s; want completed", got.Status)
	}
}
