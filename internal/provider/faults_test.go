package provider_test

import (
	"bytes"
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
	"genjobs/internal/provider/fal"
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
	id := provider.PredictionID(j.ID, e.sub(j.ID).Key)
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
	e.cog.Start(t, provider.PredictionID(k.ID, e.sub(k.ID).Key), "")
	if _, err := e.life.Cancel(e.ctx, e.job(k.ID)); err != nil {
		t.Fatal(err)
	}
	e.drain()
	if c := e.cog.Cancels(); len(c) != 1 || c[0] != provider.PredictionID(k.ID, e.sub(k.ID).Key) {
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
	id := provider.PredictionID(j.ID, e.sub(j.ID).Key)
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

// mixedRoutes routes three endpoints, one to each provider's fake.
func mixedRoutes(e *env) string {
	return fmt.Sprintf(`{
		%q: {"provider": "cog", "base_url": %q, "input": {"prompt": "prompt", "width": "width", "height": "height"}, "secret": "cog", "deadline_minutes": 5},
		%q: {"provider": "fal", "base_url": %q, "jwks_url": %q, "model": "fal-ai/kling-video/v2/master/text-to-video", "input": {"prompt": "prompt", "duration": "duration"}, "secret": "fal", "deadline_minutes": 5},
		%q: {"provider": "replicate", "base_url": %q, "model": "acme/vid", "input": {"prompt": "prompt"}, "secret": "replicate", "deadline_minutes": 5}}`,
		imageEndpoint, e.cog.URL, videoC, e.fal.URL, e.fal.JWKSURL, videoB, e.rep.URL)
}

const (
	videoC    = "/generate/video/vendor-c/model-c"
	videoB    = "/generate/video/vendor-d/model-d-flash-1.1"
	videoBody = `{"prompt": "waves", "duration": 4}`
)

// TestRandomisedRoutedJobs: routed jobs on Replicate, fal and Cog that
// complete (callback, polling, Cog's resubmission, data: URIs or the
// upload store), fail (the provider's error, a Cog path output), or are
// cancelled, in a random order. Each ends as its case says, with its
// outputs byte for byte when it completed, one charge exactly then, and
// the ledger of every workspace verifies (ledger verify --all); no job made
// a second prediction except Cog's rerun of one whose webhook was lost.
func TestRandomisedRoutedJobs(t *testing.T) {
	e := newEnv(t, mixedRoutes)
	rng := rand.New(rand.NewPCG(7, 11))
	out := e.files.Put("/out/r.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	files := []providertest.CogFile{{Name: "a.png", ContentType: "image/png", Data: pngBytes}, {Name: "b.png", ContentType: "image/png", Data: png2}}
	e.cog.UploadURL = e.uploadURL()
	type jobCase struct {
		id, provider, pid string
		kind              int
		want              job.Status
		outputs           [][]byte
	}
	var cases []*jobCase
	// Every case of every provider once, in a random order.
	perms := map[string][]int{"cog": rng.Perm(5), "fal": rng.Perm(5), "replicate": rng.Perm(5)}
	for i := 0; i < 15; i++ { // within the workspace's 20 running slots
		c := &jobCase{provider: []string{"cog", "fal", "replicate"}[i%3]}
		c.kind = perms[c.provider][i/3]
		switch c.provider {
		case "cog":
			c.id = e.create(imageEndpoint, fox).ID
		case "fal":
			c.id = e.create(videoC, videoBody).ID
		default:
			c.id = e.create(videoB, videoBody).ID
		}
		cases = append(cases, c)
	}
	submitted := func(c *jobCase) bool {
		switch c.provider {
		case "cog":
			sub := e.sub(c.id)
			c.pid = provider.PredictionID(c.id, sub.Key)
			_, ok := e.cog.Running(c.pid)
			return sub.Key != "" && ok
		case "fal":
			c.pid, _ = e.fal.ForJob(c.id)
		default:
			c.pid, _ = e.rep.ForJob(c.id)
		}
		return c.pid != ""
	}
	for i := 0; i < 60; i++ {
		all := true
		for _, c := range cases {
			all = all && submitted(c)
		}
		if all {
			break
		}
		e.stepQuick()
	}
	var lostCog []*jobCase
	for _, c := range cases {
		if !submitted(c) {
			t.Fatalf("%s job %s was not submitted\n%s", c.provider, c.id, e.logs.String())
		}
		if c.kind == 4 { // cancelled by its client, whatever the provider
			c.want = job.Cancelled
			if _, err := e.life.Cancel(e.ctx, e.job(c.id)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		switch c.provider {
		case "fal":
			switch c.kind {
			case 0, 1: // completes; its webhook arrives (0) or is lost (1): the reads find it
				c.want, c.outputs = job.Completed, [][]byte{pngBytes}
				e.fal.Set(c.pid, fal.Completed, nil, map[string]any{"video": map[string]any{"url": out, "content_type": "image/png"}}, 0, "")
				if c.kind == 0 {
					e.fal.Callback(t, c.pid)
				}
			default: // the model's error, by webhook (2) or by the reads (3)
				c.want = job.Failed
				e.fal.Set(c.pid, fal.Completed, nil, nil, http.StatusUnprocessableEntity, `{"detail": "prompt flagged"}`)
				if c.kind == 2 {
					e.fal.Callback(t, c.pid)
				}
			}
		case "cog":
			switch c.kind {
			case 0: // data: URIs
				c.want, c.outputs = job.Completed, [][]byte{pngBytes, png2}
				e.cog.Mode = providertest.CogDataURI
				e.cog.Complete(t, c.pid, false, files...)
			case 1: // through the upload store
				c.want, c.outputs = job.Completed, [][]byte{pngBytes, png2}
				e.cog.Mode = providertest.CogUpload
				e.cog.Complete(t, c.pid, false, files...)
			case 2: // its webhook lost: the next check runs it again
				c.want, c.outputs = job.Completed, [][]byte{pngBytes}
				e.cog.Finish(t, c.pid, "data:image/png;base64,"+b64(pngBytes), "", true)
				lostCog = append(lostCog, c)
			case 3: // a path on the server's disk
				c.want = job.Failed
				e.cog.Mode = providertest.CogPath
				e.cog.Complete(t, c.pid, false, files[0])
			}
		default:
			switch c.kind {
			case 0, 1:
				c.want, c.outputs = job.Completed, [][]byte{pngBytes}
				e.rep.Set(c.pid, "succeeded", "", out, "")
				if c.kind == 0 {
					e.rep.Callback(t, c.pid)
				}
			default:
				c.want = job.Failed
				e.rep.Set(c.pid, "failed", "", nil, "NSFW content detected")
			}
		}
	}
	run := func() {
		for i := 0; i < 80 && e.stepQuick(); i++ {
		}
	}
	run()
	for _, c := range lostCog {
		if _, ok := e.cog.Running(c.pid); !ok {
			t.Fatalf("cog job %s whose webhook was lost was not run again\n%s", c.id, e.logs.String())
		}
		e.cog.Mode = providertest.CogDataURI
		e.cog.Complete(t, c.pid, false, files[0])
	}
	run()
	for _, c := range cases {
		j := e.job(c.id)
		if j.Status != c.want {
			t.Errorf("%s job %s (case %d) is %s; want %s (%+v)", c.provider, c.id, c.kind, j.Status, c.want, j.Error)
			continue
		}
		if c.want == job.Failed && (j.Error == nil || j.Error.Code != job.CodeProvider) {
			t.Errorf("%s job %s failed with %+v; want provider_error", c.provider, c.id, j.Error)
		}
		if c.want == job.Completed {
			res := e.result(j)
			if len(res) != len(c.outputs) {
				t.Errorf("%s job %s has %d results; want %d", c.provider, c.id, len(res), len(c.outputs))
			}
			for i := range min(len(res), len(c.outputs)) {
				if !bytes.Equal(res[i], c.outputs[i]) {
					t.Errorf("%s job %s: result %d differs from the provider's output", c.provider, c.id, i)
				}
			}
		}
		want := 0
		if c.want == job.Completed {
			want = 1
		}
		if e.charges(c.id) != want {
			t.Errorf("%s job %s (%s) has %d charges", c.provider, c.id, j.Status, e.charges(c.id))
		}
	}
	n := map[string]int{}
	for _, c := range cases {
		n[c.provider]++
		t.Logf("%s case %d: %s", c.provider, c.kind, c.want)
	}
	if e.rep.Creates() != n["replicate"] || e.fal.Creates() != n["fal"] || e.cog.Creates() != n["cog"]+len(lostCog) {
		t.Errorf("predictions: Replicate %d, fal %d, Cog %d; want %d, %d, %d", e.rep.Creates(), e.fal.Creates(), e.cog.Creates(),
			n["replicate"], n["fal"], n["cog"]+len(lostCog))
	}
	e.verifyAll()
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
