package provider_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/app/workerfn"
	"genjobs/internal/catalog"
	"genjobs/internal/cogserver"
	"genjobs/internal/engine/reference"
	"genjobs/internal/fetch"
	"genjobs/internal/job"
	"genjobs/internal/netguard"
	"genjobs/internal/provider"
	"genjobs/internal/provider/fal"
	"genjobs/internal/provider/providertest"
	"genjobs/internal/queue"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/testenv/timeline"
	"genjobs/internal/worker"
)

// BenchmarkCallbackToCompleted times a completion callback with a 1 MiB
// output, from the callback's POST to the job completed, for each
// provider: Replicate (Standard Webhooks, the output fetched from a URL),
// fal (ED25519 against its JWKS, cached after the first; the file object's
// URL fetched) and Cog (a bearer token, the output a data: URI in the
// webhook). It covers the callback's verification and stash, the step's
// read of it, the streamed copy into the results bucket and the end, and
// reports p50 and p99; the jobs are submitted before the clock runs. The
// first poll waits its production 15 s, so the callback's own step ends
// the job, as deployed.
// BENCH_TRACE=1 prints the last callback's AWS calls and HTTP requests.
//
//	go run ./infra/local exec -- go test -run '^$' -bench CallbackToCompleted -benchtime 30x ./internal/provider/
func BenchmarkCallbackToCompleted(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	type callback struct {
		url  string
		body []byte
		h    http.Header
	}
	for _, c := range []struct {
		name   string
		routes func(*env) string
		// ready makes job j's prediction succeed with the output and
		// returns its completion webhook, unsent.
		ready func(b *testing.B, e *env, j *job.Job, out string) callback
	}{
		{"replicate", replicateRoutes, func(b *testing.B, e *env, j *job.Job, out string) callback {
			pid, _ := e.rep.ForJob(j.ID)
			e.rep.Set(pid, "succeeded", "", out, "")
			url, body, h := e.rep.Webhook(pid, time.Now())
			return callback{url, body, h}
		}},
		{"fal", falRoutes, func(b *testing.B, e *env, j *job.Job, out string) callback {
			rid, _ := e.fal.ForJob(j.ID)
			e.fal.Set(rid, fal.Completed, nil, map[string]any{"images": []any{map[string]any{"url": out, "content_type": "image/png"}}}, 0, "")
			w := e.fal.Webhook(rid, time.Now())
			return callback{w.URL, w.Body, w.Header}
		}},
		{"cog", cogRoutes, func(b *testing.B, e *env, j *job.Job, _ string) callback {
			p, ok := e.cog.Running(provider.PredictionID(j.ID, e.sub(j.ID).Key))
			if !ok {
				b.Fatal("the Cog prediction is not running")
			}
			p.Status, p.Output = "succeeded", "data:image/png;base64,"+b64(data)
			body, _ := json.Marshal(p)
			return callback{p.Webhook, body, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + e.cog.WebhookToken}}}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b, c.routes)
			// The first poll keeps its production delay, as deployed: the
			// callback's own step ends the job, not a poll the chain
			// happens to have on the queue.
			e.runner.Timings.FirstPoll = provider.DefaultTimings.FirstPoll
			e.runner.Timings.MaxPoll = provider.DefaultTimings.MaxPoll
			out := e.files.Put("/out/1mib.png", providertest.File{ContentType: "image/png", Data: data, ClaimLength: true})
			var took []time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				j := e.create(imageEndpoint, fox)
				if got := e.steps(j.ID, 1); got.Status != job.Scheduled {
					b.Fatalf("job %s after submission", got.Status)
				}
				cb := c.ready(b, e, j, out)
				traced := timeline.Enabled() && i == b.N-1
				if traced {
					e.trace.Start()
				}
				b.StartTimer()
				start := time.Now()
				if code := providertest.Send(b, cb.url, cb.body, cb.h); code != 204 {
					b.Fatalf("callback answered %d", code)
				}
				e.trace.Mark("callback answered", time.Now())
				if got := e.steps(j.ID, 5); got.Status != job.Completed {
					b.Fatalf("job %s", got.Status)
				}
				took = append(took, time.Since(start))
				b.StopTimer()
				if traced {
					e.trace.Mark("completed seen", time.Now())
					e.trace.Print(os.Stderr, c.name+": the last callback, from its POST to the job seen completed", start)
				}
				e.drain()
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkCogServerVsEngine times one model-e-4 image (512x512) from
// creation (the job stored and its message sent) to completed, twice per
// iteration, interleaved: routed to the repository's Cog model server
// (internal/cogserver with the reference engines, on 127.0.0.1, outputs
// uploaded to its own /uploads/ as `make cogserver` does), whose completed
// webhook reaches the callback route; and run by the in-process worker from
// the jobs queue with the same engine. The first poll waits its production
// 15 s, so the callback alone ends a routed job. It reports both p50s and
// their difference: the async path's overhead.
//
//	go run ./infra/local exec -- go test -run '^$' -bench CogServerVsEngine -benchtime 20x ./internal/provider/
func BenchmarkCogServerVsEngine(b *testing.B) {
	var model http.Handler
	cogURL := providertest.Listen(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { model.ServeHTTP(w, r) })).URL
	guard := &netguard.Guard{AllowPrivate: true} // everything here is on 127.0.0.1
	cat, err := catalog.New()
	if err != nil {
		b.Fatal(err)
	}
	srv, err := cogserver.New(cogserver.Options{
		Catalog: cat, Engines: reference.Engines(), Inputs: fetch.New(guard),
		Webhooks:     &http.Client{Transport: guard.Transport(), Timeout: time.Minute},
		WebhookToken: "cog-webhook-token", UploadURL: cogURL + "/uploads/",
		Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	model = srv
	e := newEnv(b, func(*env) string {
		return fmt.Sprintf(`{%q: {"provider": "cog", "base_url": %q,
			"input": {"prompt": "prompt", "width": "width", "height": "height", "seed": "seed"}, "secret": "cog", "deadline_minutes": 5}}`,
			imageEndpoint, cogURL+"/image/vendor-b/model-e-4")
	})
	e.runner.Timings.FirstPoll = provider.DefaultTimings.FirstPoll
	e.runner.Timings.MaxPoll = provider.DefaultTimings.MaxPoll
	w := &worker.Worker{
		Store: e.store, Ender: e.life, Catalog: e.cat, Engines: reference.Engines(),
		Inputs: fetch.New(guard), Blobs: workerfn.Blobs{Store: e.blobs}, Assets: assetsdb.New(e.store.Store), Clock: e.clock,
		Log: slog.New(slog.NewJSONHandler(e.logs, nil)), LeaseFor: worker.DefaultLeaseFor, Heartbeat: worker.DefaultHeartbeat,
	}
	// runLocal takes the job's message from the jobs queue and runs it, as
	// the worker function does.
	runLocal := func(id string) {
		out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.jq), MaxNumberOfMessages: 1, WaitTimeSeconds: 3})
		if err != nil || len(out.Messages) != 1 {
			b.Fatalf("no message for %s on the jobs queue: %v", id, err)
		}
		var msg queue.Message
		if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &msg); err != nil || msg.JobID != id {
			b.Fatalf("message %s; want job %s (%v)", aws.ToString(out.Messages[0].Body), id, err)
		}
		if err := w.Run(e.ctx, id); err != nil {
			b.Fatalf("worker: %v\n%s", err, e.logs.String())
		}
		if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.jq), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
			b.Fatal(err)
		}
	}
	var served, local []time.Duration
	for i := 0; i < b.N; i++ {
		body := fmt.Sprintf(`{"prompt": "a lighthouse at dusk", "width": 512, "height": 512, "seed": %d}`, i+1)

		start := time.Now()
		j := e.createRouted(imageEndpoint, body, true)
		if got := e.steps(j.ID, 6); got.Status != job.Completed || len(got.Outputs) != 1 {
			b.Fatalf("routed job %s with %d outputs\n%s", got.Status, len(got.Outputs), e.logs.String())
		}
		served = append(served, time.Since(start))
		b.StopTimer()
		e.drain()
		b.StartTimer()

		start = time.Now()
		j = e.createRouted(imageEndpoint, body, false)
		runLocal(j.ID)
		if got := e.job(j.ID); got.Status != job.Completed || len(got.Outputs) != 1 {
			b.Fatalf("in-process job %s with %d outputs\n%s", got.Status, len(got.Outputs), e.logs.String())
		}
		local = append(local, time.Since(start))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	cogP50, localP50 := p50(served), p50(local)
	b.ReportMetric(ms(cogP50), "cogserver-p50-ms")
	b.ReportMetric(ms(localP50), "engine-p50-ms")
	b.ReportMetric(ms(cogP50-localP50), "overhead-p50-ms")
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
