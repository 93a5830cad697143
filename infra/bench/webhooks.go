package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/testenv/timeline"
)

// webhookJobs is how many jobs' webhooks are timed, one at a time.
const (
	webhookJobs       = 200
	webhookPhaseLimit = 2 * time.Minute
	webhookWorkspace  = "ws_bench_webhooks"
)

// webhookReport is the webhook run: from each job's terminal write
// (acknowledged by DynamoDB) to its receiver getting the POST.
type webhookReport struct {
	lat  []time.Duration
	errs []string
	// What one webhook consumed: the notifier's and deliverer's calls and
	// run times (cost.go).
	usage hookUsage
}

// measureWebhooks plays the table's stream into the notifier and the
// deliveries queue into the deliverer, as `make run` does, on a table and
// queues of their own; a receiver on 127.0.0.1 notes each POST. Each job is
// created in the store with the receiver's URL and ended once the one before
// was delivered.
func measureWebhooks(ctx context.Context, tpl *sam.Template, clients *devstack.Stack, tmp string) (*webhookReport, error) {
	local := devstack.New(clients.DynamoDB, clients.SQS, clients.S3, "")
	local.Table, local.JobsQueue, local.DeliveriesQueue = "genjobs-bench-webhooks", "genjobs-bench-webhooks-jobs", "genjobs-bench-webhooks-deliveries"
	local.ResultsBucket, local.AssetsBucket = "genjobs-bench-webhooks-results", "genjobs-bench-webhooks-assets"
	local.UseMoto(clients.MotoEndpoint)
	// The functions' calls are metered (KMS's too); the bench's own (the
	// jobs' creations and ends) are not.
	m := newMeter(clients.DynamoDB)
	var tr timeline.Timeline // BENCH_TRACE: the last timed webhook's timeline
	local.FunctionAPIOptions = append(m.apiOptions(), tr.Middleware)
	local.SQS = sqs.New(clients.SQS.Options(), func(o *sqs.Options) { o.APIOptions = append(slices.Clone(o.APIOptions), tr.Middleware) })
	if local.Streams != nil {
		local.Streams = dynamodbstreams.New(local.Streams.Options(), func(o *dynamodbstreams.Options) {
			o.APIOptions = append(slices.Clone(o.APIOptions), tr.Middleware)
		})
	}
	st := store.New(clients.DynamoDB, local.Table)
	served, _, err := serveBench(ctx, tpl, local, st, webhookWorkspace, webhookJobs+10)
	if err != nil {
		return nil, err
	}
	defer served.close()
	unmeterSweeper(served.handlers)
	notifier, deliverer := &runTimes{}, &runTimes{}
	for id, h := range served.handlers {
		switch {
		case h.Stream != nil:
			h.Stream = traced(&tr, id, timedBy(notifier, h.Stream))
		case id == "DelivererFunction":
			h.SQS = traced(&tr, id, timedBy(deliverer, h.SQS))
		}
		served.handlers[id] = h
	}
	o := local.TriggerOptions()
	o.Log = slog.New(slog.DiscardHandler)
	stopTriggers, err := playTriggers(ctx, tpl, served.handlers, o)
	if err != nil {
		return nil, err
	}
	defer stopTriggers()

	var mu sync.Mutex
	arrived := map[string]chan time.Time{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		tr.Mark("receiver's request", at)
		var rec struct {
			ID string `json:"job_id"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &rec)
		mu.Lock()
		ch := arrived[rec.ID]
		mu.Unlock()
		if ch != nil {
			select {
			case ch <- at:
			default:
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	rep := &webhookReport{}
	pctx, cancel := context.WithTimeout(ctx, webhookPhaseLimit)
	defer cancel()
	fmt.Fprintf(os.Stderr, "bench: %d webhooks, terminal write to the receiver...\n", webhookJobs)
	// One webhook at a time: timed, then costJobs more metered by AWS's
	// rules (which slows their writes: the timed ones' run times are priced).
	send := func() {
		now := time.Now()
		j := &job.Job{ID: job.NewID(now), WorkspaceID: webhookWorkspace, CreatedAt: now, Endpoint: generatePath,
			Request: []byte(`{}`), BaseURL: served.url, WebhookURL: receiver.URL + "/hooks", Price: 100_000}
		if err := st.CreateJob(pctx, j); err != nil {
			rep.errs = append(rep.errs, err.Error())
			return
		}
		ch := make(chan time.Time, 1)
		mu.Lock()
		arrived[j.ID] = ch
		mu.Unlock()
		traced := timeline.Enabled() && len(rep.lat) == webhookJobs-1
		if traced {
			tr.Start()
		}
		if _, err := st.Transition(pctx, j, job.Change{To: job.Completed}, time.Now()); err != nil {
			rep.errs = append(rep.errs, err.Error())
			return
		}
		written := time.Now()
		tr.Mark("terminal write acknowledged", written)
		select {
		case at := <-ch:
			rep.lat = append(rep.lat, at.Sub(written))
			if traced {
				time.Sleep(100 * time.Millisecond) // the deliverer's record of the attempt
				tr.Print(os.Stderr, "the last timed webhook, from its terminal write", written)
			}
		case <-time.After(30 * time.Second):
			rep.errs = append(rep.errs, "no webhook within 30 s of job "+j.ID)
		case <-pctx.Done():
		}
	}
	for i := 0; i < webhookJobs && pctx.Err() == nil; i++ {
		send()
	}
	timed := len(rep.lat)
	rep.usage = hookUsage{notifierRun: percentile(notifier.since(0), 50), notifierMB: functionMemory(tpl, "NotifierFunction"),
		delivererMB: functionMemory(tpl, "DelivererFunction")}
	runs := deliverer.since(0)
	m.bill.on.Store(true)
	before := m.snapshot()
	for i := 0; i < costJobs && pctx.Err() == nil; i++ {
		send()
	}
	time.Sleep(time.Second) // the last attempt's record, written after the POST
	rep.usage.jobUsage = perJob(m.snapshot().minus(before), len(rep.lat)-timed, runs)
	m.bill.on.Store(false)
	rep.lat = rep.lat[:timed]
	if n := len(rep.lat) + len(rep.errs); n < webhookJobs {
		rep.errs = append(rep.errs, fmt.Sprintf("stopped after %s with %d of %d webhooks", webhookPhaseLimit, n, webhookJobs))
	}
	return rep, ctx.Err()
}
