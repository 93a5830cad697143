package provider_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"genjobs/internal/job"
	"genjobs/internal/netguard"
	"genjobs/internal/provider"
	"genjobs/internal/provider/providertest"
)

const fox = `{"prompt": "a red fox", "width": 512, "height": 512}`

func cogRoutes(e *env) string {
	return fmt.Sprintf(`{%q: {"provider": "cog", "base_url": %q,
		"input": {"prompt": "prompt", "width": "width", "height": "height", "seed": "seed"}, "secret": "cog", "deadline_minutes": 5}}`,
		imageEndpoint, e.cog.URL)
}

// TestPollingCompletesWithoutCallbacks: no callback ever comes; the reads
// of the chain see the prediction through to completed.
func TestPollingCompletesWithoutCallbacks(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	p := e.rep.Only(t)
	e.rep.Set(p.ID, "processing", "", nil, "")
	if got := e.steps(j.ID, 1); got.Status != job.Processing {
		t.Fatalf("job is %s; want processing", got.Status)
	}
	out := e.files.Put("/out/x.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.rep.Set(p.ID, "succeeded", "", map[string]any{"image": out}, "")
	if got := e.steps(j.ID, 2); got.Status != job.Completed {
		t.Fatalf("job is %s; want completed by polling\n%s", got.Status, e.logs.String())
	}
	if e.rep.Reads() < 2 {
		t.Errorf("%d reads; the prediction was not polled", e.rep.Reads())
	}
	e.audit()
}

// TestProviderFailureFailsTheJob: a prediction that fails ends the job
// failed with provider_error and the provider's words; nothing is charged.
func TestProviderFailureFailsTheJob(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	p := e.rep.Only(t)
	e.rep.Set(p.ID, "failed", "", nil, "CUDA out of memory")
	got := e.steps(j.ID, 2)
	if got.Status != job.Failed || got.Error == nil || got.Error.Code != job.CodeProvider || got.Error.Message != "CUDA out of memory" {
		t.Fatalf("job %s, error %+v; want failed provider_error with the provider's message", got.Status, got.Error)
	}
	if e.charges(j.ID) != 0 {
		t.Error("a failed job was charged")
	}
	e.drain()
	if len(e.rep.Cancels()) != 0 {
		t.Errorf("the failed prediction was cancelled: %v", e.rep.Cancels())
	}
	e.audit()
}

// TestSubmissionRetriedAfter503And429: two refusals with Retry-After, then
// success: one prediction, and the job completes.
func TestSubmissionRetriedAfter503And429(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	e.rep.FailNext(
		providertest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1", Body: `{"detail":"busy"}`},
		providertest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "1", Body: `{"detail":"Request was throttled. Expected available in 1 second."}`},
	)
	j := e.create(imageEndpoint, fox)
	e.clock.T = e.clock.T.Add(time.Minute) // past the in-flight wait of each try
	for i := 0; i < 6 && e.rep.Creates() == 0; i++ {
		e.step()
		e.clock.T = e.clock.T.Add(time.Minute)
	}
	if e.rep.Creates() != 1 {
		t.Fatalf("%d predictions; want 1", e.rep.Creates())
	}
	p := e.rep.Only(t)
	out := e.files.Put("/out/y.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.rep.Set(p.ID, "succeeded", "", out, "")
	if got := e.steps(j.ID, 4); got.Status != job.Completed {
		t.Fatalf("job is %s; want completed\n%s", got.Status, e.logs.String())
	}
	if e.rep.Creates() != 1 || e.charges(j.ID) != 1 {
		t.Fatalf("%d predictions, %d charges; want 1 and 1", e.rep.Creates(), e.charges(j.ID))
	}
	if !strings.Contains(e.logs.String(), `"retry_in":"1s"`) {
		t.Errorf("the retries did not wait the Retry-After the provider gave")
	}
}

// TestSubmissionRefused422: a 4xx refusal fails the job with
// provider_error and the provider's message, trimmed to 300 characters.
func TestSubmissionRefused422(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	long := "Invalid input: width must be a multiple of 64. " + strings.Repeat("Details follow. ", 40)
	e.rep.FailNext(providertest.Fault{Status: http.StatusUnprocessableEntity, Body: fmt.Sprintf(`{"title":"Invalid input","detail":%q,"status":422}`, long)})
	j := e.create(imageEndpoint, fox)
	got := e.steps(j.ID, 2)
	if got.Status != job.Failed || got.Error.Code != job.CodeProvider {
		t.Fatalf("job %s %+v; want failed provider_error", got.Status, got.Error)
	}
	if !strings.Contains(got.Error.Message, "width must be a multiple of 64") || utf8.RuneCountInString(got.Error.Message) > provider.MaxMessage {
		t.Fatalf("message %q (%d characters): not the provider's, or longer than 300", got.Error.Message, utf8.RuneCountInString(got.Error.Message))
	}
	if e.rep.Creates() != 0 {
		t.Errorf("%d predictions after a refusal", e.rep.Creates())
	}
	e.audit()
}

// TestOutputFaults: an output that answers 404, one over the size cap, one
// at a private address the network policy refuses: the job fails and
// nothing is left stored. One whose bytes stop midway is retried, nothing
// half-stored, and completes once it is whole.
func TestOutputFaults(t *testing.T) {
	big := make([]byte, 2<<20) // the test cap is 1 MiB
	for name, c := range map[string]struct {
		file    *providertest.File
		url     string
		private bool // refuse private destinations
		want    string
	}{
		"404":                 {file: &providertest.File{Status: http.StatusNotFound}, want: "answered 404"},
		"over cap":            {file: &providertest.File{ContentType: "image/png", Data: big, ClaimLength: true}, want: "larger than 1 MiB"},
		"over cap, no length": {file: &providertest.File{ContentType: "image/png", Data: big}, want: "larger than 1 MiB"},
		// 127.0.0.2: loopback, so a guard bug could not reach off the machine.
		"private address": {url: "http://127.0.0.2:9/out.png", private: true, want: "refused by the network policy"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, replicateRoutes)
			if c.private {
				e.runner.Fetch = (&netguard.Guard{}).Transport()
			}
			j := e.create(imageEndpoint, fox)
			e.steps(j.ID, 1)
			p := e.rep.Only(t)
			url := c.url
			if c.file != nil {
				url = e.files.Put("/out/f.png", *c.file)
			}
			e.rep.Set(p.ID, "succeeded", "", []string{url}, "")
			got := e.steps(j.ID, 3)
			if got.Status != job.Failed || got.Error.Code != job.CodeProvider || !strings.Contains(got.Error.Message, c.want) {
				t.Fatalf("job %s %+v; want failed provider_error saying %q", got.Status, got.Error, c.want)
			}
			if left := e.objects("results/"); len(left) != 0 {
				t.Fatalf("left stored: %v", left)
			}
			e.audit()
		})
	}
	t.Run("stops midway", func(t *testing.T) {
		e := newEnv(t, replicateRoutes)
		j := e.create(imageEndpoint, fox)
		e.steps(j.ID, 1)
		p := e.rep.Only(t)
		data := []byte(strings.Repeat("0123456789", 30_000))
		url := e.files.Put("/out/v.mp4", providertest.File{ContentType: "video/mp4", Data: data, StopAfter: 100_000})
		e.rep.Set(p.ID, "succeeded", "", url, "")
		if got := e.steps(j.ID, 1); got.Status.Terminal() {
			t.Fatalf("job %s %+v after a copy that broke off; want it retried", got.Status, got.Error)
		}
		if left := e.objects("results/"); len(left) != 0 {
			t.Fatalf("half-stored: %v", left)
		}
		e.files.Put("/out/v.mp4", providertest.File{ContentType: "video/mp4", Data: data, ClaimLength: true})
		got := e.steps(j.ID, 2)
		if got.Status != job.Completed || !strings.HasSuffix(got.Outputs[0], ".mp4") {
			t.Fatalf("job %s %v; want completed", got.Status, got.Outputs)
		}
		if files := e.result(got); string(files[0]) != string(data) {
			t.Fatal("the stored output is not the provider's")
		}
		if left := e.objects("results/"); len(left) != 1 {
			t.Fatalf("stored %v; want the one output", left)
		}
	})
}

// TestOnlyTheProvidersOwnHostIsTrusted: with private destinations
// refused, an output on the route's base_url host (the operator's server,
// here on 127.0.0.1) is copied without the network guard; but one there
// that redirects to another loopback port, and one on the same host name at
// another port, go through the guard and are refused: the job fails, the
// other server is never contacted, and the guard's dialer (which records
// and fails) is never asked to connect.
func TestOnlyTheProvidersOwnHostIsTrusted(t *testing.T) {
	var mu sync.Mutex
	var dialed []string
	guard := &netguard.Guard{Connect: func(_, address string) error {
		mu.Lock()
		defer mu.Unlock()
		dialed = append(dialed, address)
		return errors.New("this test connects nowhere through the guard")
	}}
	png := providertest.File{ContentType: "image/png", Data: pngBytes}
	for name, c := range map[string]struct {
		output  func(e *env) string
		refused bool
	}{
		"on the provider's host": {output: func(e *env) string { return e.rep.Files.Put("/files/fox.png", png) }},
		"redirected from the provider's host to another port": {refused: true, output: func(e *env) string {
			return e.rep.Files.Put("/files/fox.png", providertest.File{Redirect: e.files.Put("/out/fox.png", png)})
		}},
		"the provider's host name at another port": {refused: true, output: func(e *env) string { return e.files.Put("/out/fox.png", png) }},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, replicateRoutes)
			e.runner.Fetch = guard.Transport()
			j := e.create(imageEndpoint, fox)
			e.steps(j.ID, 1)
			p := e.rep.Only(t)
			e.rep.Set(p.ID, "succeeded", "", []string{c.output(e)}, "")
			got := e.steps(j.ID, 3)
			if !c.refused {
				if got.Status != job.Completed || string(e.result(got)[0]) != string(pngBytes) {
					t.Fatalf("job %s %+v; want completed with the output's bytes", got.Status, got.Error)
				}
				return
			}
			if got.Status != job.Failed || got.Error.Code != job.CodeProvider || !strings.Contains(got.Error.Message, "refused by the network policy") {
				t.Fatalf("job %s %+v; want failed, refused by the network policy", got.Status, got.Error)
			}
			if n := e.files.Hits("/out/fox.png"); n != 0 {
				t.Errorf("the other port was contacted %d times", n)
			}
			if left := e.objects("results/"); len(left) != 0 {
				t.Errorf("left stored: %v", left)
			}
			e.audit()
		})
	}
	if len(dialed) != 0 {
		t.Errorf("the guard let connections through to %v", dialed)
	}
}

// TestDuplicateSubmissionMessage: the same start message twice makes one
// prediction.
func TestDuplicateSubmissionMessage(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	j := e.create(imageEndpoint, fox)
	if err := e.life.Queue.Enqueue(e.ctx, j); err != nil { // delivered twice
		t.Fatal(err)
	}
	e.step()
	e.step()
	if e.rep.Creates() != 1 {
		t.Fatalf("%d predictions; want 1", e.rep.Creates())
	}
}

// TestLostSubmissionAnswer: the provider creates the prediction but its
// answer is lost; the next step finds it by the job id of its webhook URL
// instead of creating another, and the job completes.
func TestLostSubmissionAnswer(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	e.rep.Hide = true // the list carries no webhook: each prediction is read
	e.rep.FailNext(providertest.Fault{Lose: true})
	j := e.create(imageEndpoint, fox)
	e.step()
	if e.rep.Creates() != 1 {
		t.Fatalf("%d predictions; want the one whose answer was lost", e.rep.Creates())
	}
	e.clock.T = e.clock.T.Add(time.Minute) // past the wait for an answer in flight
	e.step()
	p := e.rep.Only(t)
	out := e.files.Put("/out/z.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.rep.Set(p.ID, "succeeded", "", out, "")
	if got := e.steps(j.ID, 3); got.Status != job.Completed {
		t.Fatalf("job %s; want completed\n%s", got.Status, e.logs.String())
	}
	if e.rep.Creates() != 1 {
		t.Fatalf("%d predictions; want 1", e.rep.Creates())
	}
}

// killedStore fails the recording of the prediction's id once, as a
// function killed between submitting and recording would leave it.
type killedStore struct {
	provider.Store
	killed bool
}

func (k *killedStore) RecordPrediction(ctx context.Context, jobID, marker, id string) error {
	if !k.killed {
		k.killed = true
		return errors.New("killed")
	}
	return k.Store.RecordPrediction(ctx, jobID, marker, id)
}

// TestKilledBetweenSubmitAndRecord: one prediction, and the job completes.
func TestKilledBetweenSubmitAndRecord(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	e.runner.Store = &killedStore{Store: e.store}
	j := e.create(imageEndpoint, fox)
	msg := provider.Message{Kind: provider.StepSubmit, JobID: j.ID}
	if err := e.runner.Step(e.ctx, msg); err == nil {
		t.Fatal("the killed step reported success")
	}
	// Its message comes back (the job's hold has lapsed by then).
	e.clock.T = e.clock.T.Add(2 * time.Minute)
	if err := e.runner.Step(e.ctx, msg); err != nil {
		t.Fatal(err)
	}
	p := e.rep.Only(t)
	out := e.files.Put("/out/k.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.rep.Set(p.ID, "succeeded", "", out, "")
	if got := e.steps(j.ID, 3); got.Status != job.Completed {
		t.Fatalf("job %s; want completed\n%s", got.Status, e.logs.String())
	}
	if e.rep.Creates() != 1 || e.charges(j.ID) != 1 {
		t.Fatalf("%d predictions, %d charges", e.rep.Creates(), e.charges(j.ID))
	}
}

// TestDeadlineTimesOutAndCancels: no callback and a prediction that runs on:
// at the route's deadline the job ends timeout and the prediction is
// cancelled.
func TestDeadlineTimesOutAndCancels(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	p := e.rep.Only(t)
	e.rep.Set(p.ID, "processing", "", nil, "")
	e.steps(j.ID, 1)
	e.clock.T = e.clock.T.Add(6 * time.Minute) // the route's deadline is 5
	got := e.steps(j.ID, 2)
	if got.Status != job.Failed || got.Error.Code != job.CodeTimeout {
		t.Fatalf("job %s %+v; want failed timeout", got.Status, got.Error)
	}
	e.drain()
	if c := e.rep.Cancels(); len(c) != 1 || c[0] != p.ID {
		t.Fatalf("cancels %v; want %s", c, p.ID)
	}
	if e.charges(j.ID) != 0 {
		t.Error("a timed-out job was charged")
	}
	e.audit()
}

// TestCogJob: through a Cog server: start and completion webhooks with the
// bearer token; a data: URI output; a cancel at processing reaches the
// server.
func TestCogJob(t *testing.T) {
	e := newEnv(t, cogRoutes)
	j := e.create(imageEndpoint, fox)
	if got := e.steps(j.ID, 1); got.Status != job.Scheduled {
		t.Fatalf("job %s; want scheduled", got.Status)
	}
	id := provider.PredictionID(j.ID)
	if p, ok := e.cog.Running(id); !ok || p.Input["width"] == nil || !strings.Contains(p.Webhook, "/callbacks/cog/"+j.ID+"/") {
		t.Fatalf("running %v %+v", ok, p)
	}
	if code := e.cog.Start(t, id, " 25%|##  |"); code != http.StatusNoContent {
		t.Fatalf("start webhook answered %d", code)
	}
	if got := e.job(j.ID); got.Status != job.Sampling || *got.Progress != 0.25 {
		t.Fatalf("job %s %v; want sampling 0.25", got.Status, got.Progress)
	}
	// A webhook without the bearer token is refused.
	e.cog.WebhookToken = "wrong"
	if code := e.cog.Start(t, id, " 50%|##  |"); code != http.StatusUnauthorized {
		t.Fatalf("webhook with a wrong token answered %d; want 401", code)
	}
	e.cog.WebhookToken = "cog-webhook-token"
	if code := e.cog.Finish(t, id, "data:image/png;base64,"+b64(pngBytes), "", false); code != http.StatusNoContent {
		t.Fatalf("completed webhook answered %d", code)
	}
	got := e.steps(j.ID, 3)
	if got.Status != job.Completed || string(e.result(got)[0]) != string(pngBytes) {
		t.Fatalf("job %s; want completed with the server's bytes", got.Status)
	}

	// Another job, cancelled while processing: the server is told.
	e.drain()
	k := e.create(imageEndpoint, fox)
	e.steps(k.ID, 1)
	e.cog.Start(t, provider.PredictionID(k.ID), "")
	if _, err := e.life.Cancel(e.ctx, e.job(k.ID)); err != nil {
		t.Fatal(err)
	}
	e.drain()
	if c := e.cog.Cancels(); len(c) != 1 || c[0] != provider.PredictionID(k.ID) {
		t.Fatalf("cancels %v", c)
	}
	e.audit()
}

// TestCogResubmitsWhenTheCallbackIsLost: Cog cannot be read; a job whose
// completion webhook is lost is submitted again with the same id, and
// completes when that run's webhook comes.
func TestCogResubmitsWhenTheCallbackIsLost(t *testing.T) {
	e := newEnv(t, cogRoutes)
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	id := provider.PredictionID(j.ID)
	e.step() // the check while it runs: the same prediction answers
	if e.cog.Creates() != 1 || e.cog.Puts() != 2 {
		t.Fatalf("%d predictions after %d PUTs; want 1 after 2", e.cog.Creates(), e.cog.Puts())
	}
	e.cog.Finish(t, id, "data:image/png;base64,"+b64(pngBytes), "", true) // its webhook lost
	e.step()                                                              // the next check runs it again
	if _, ok := e.cog.Running(id); !ok {
		t.Fatal("the prediction was not submitted again")
	}
	e.cog.Finish(t, id, "data:image/png;base64,"+b64(pngBytes), "", false)
	if got := e.steps(j.ID, 3); got.Status != job.Completed {
		t.Fatalf("job %s; want completed\n%s", got.Status, e.logs.String())
	}
	if e.charges(j.ID) != 1 {
		t.Error("not charged once")
	}
}

// TestRandomisedRoutedJobs: routed jobs that complete, fail, are cancelled
// or lose their callbacks, in a random order; then every job has ended, the
// ledger adds up and the slot counters match.
func TestRandomisedRoutedJobs(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	rng := rand.New(rand.NewPCG(7, 11))
	out := e.files.Put("/out/r.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, e.create(imageEndpoint, fox).ID)
	}
	for i := 0; i < 40 && e.rep.Creates() < len(ids); i++ {
		e.stepQuick()
	}
	byJob := map[string]string{}
	for _, id := range ids {
		pid, ok := e.rep.ForJob(id)
		if !ok {
			t.Fatalf("job %s was not submitted", id)
		}
		byJob[id] = pid
	}
	for _, id := range ids {
		pid := byJob[id]
		switch rng.IntN(4) {
		case 0: // completes, its callback arrives
			e.rep.Set(pid, "succeeded", "", out, "")
			e.rep.Callback(t, pid)
		case 1: // completes, its callback lost: polling finds it
			e.rep.Set(pid, "succeeded", "", out, "")
		case 2:
			e.rep.Set(pid, "failed", "", nil, "NSFW content detected")
		case 3:
			if _, err := e.life.Cancel(e.ctx, e.job(id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 40; i++ {
		if !e.stepQuick() {
			break
		}
	}
	for _, id := range ids {
		j := e.job(id)
		if !j.Status.Terminal() {
			t.Errorf("job %s is still %s", id, j.Status)
		}
		want := 0
		if j.Status == job.Completed {
			want = 1
		}
		if e.charges(id) != want {
			t.Errorf("job %s (%s) has %d charges", id, j.Status, e.charges(id))
		}
	}
	if e.rep.Creates() != len(ids) {
		t.Errorf("%d predictions for %d jobs", e.rep.Creates(), len(ids))
	}
	e.audit()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestStepKindsAreExplicit: the provider queue's message says what it asks
// for. A job's creation sends a submit; its end sends a cancel, which
// reaches the provider; a check of a job that has ended cancels nothing,
// and a cancel of a job still running is dropped.
func TestStepKindsAreExplicit(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	j := e.create(imageEndpoint, fox)
	if kinds := e.kinds(); len(kinds) != 1 || kinds[0] != provider.StepSubmit {
		t.Fatalf("creation sent %v; want one submit", kinds)
	}
	if err := e.runner.Step(e.ctx, provider.Message{Kind: provider.StepSubmit, JobID: j.ID}); err != nil {
		t.Fatal(err)
	}
	p := e.rep.Only(t)
	e.purge()
	if err := e.runner.Step(e.ctx, provider.Message{Kind: provider.StepCancel, JobID: j.ID}); err != nil {
		t.Fatal(err)
	}
	if c := e.rep.Cancels(); len(c) != 0 {
		t.Fatalf("a cancel step of a running job cancelled %v", c)
	}
	if _, err := e.life.Cancel(e.ctx, e.job(j.ID)); err != nil {
		t.Fatal(err)
	}
	if kinds := e.kinds(); len(kinds) != 1 || kinds[0] != provider.StepCancel {
		t.Fatalf("the job's end sent %v; want one cancel", kinds)
	}
	if err := e.runner.Step(e.ctx, provider.Message{Kind: provider.StepPoll, JobID: j.ID}); err != nil {
		t.Fatal(err)
	}
	if c := e.rep.Cancels(); len(c) != 0 {
		t.Fatalf("a check of an ended job cancelled %v", c)
	}
	if err := e.runner.Step(e.ctx, provider.Message{Kind: provider.StepCancel, JobID: j.ID}); err != nil {
		t.Fatal(err)
	}
	if c := e.rep.Cancels(); len(c) != 1 || c[0] != p.ID {
		t.Fatalf("cancels %v; want %s", c, p.ID)
	}
	e.audit()
}
