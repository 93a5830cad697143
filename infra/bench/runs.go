package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/job"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/testenv/timeline"
)

// The job runs: enhance jobs of the uploaded photo, run by the worker that
// the local runner plays from the jobs queue, as in `make run`.
const (
	// runJobs are timed from creation to completion, runInFlight at a time:
	// one per poller of the queue's mapping, so that each job finds a free
	// worker and its time is its own, not a wait behind others.
	runJobs      = 50
	runInFlight  = triggers.DefaultPollers
	runSide      = 2048
	runFormat    = "jpg"
	runPollEvery = 25 * time.Millisecond // GET /jobs/{id}

	// queueJobs are created one at a time, each once the one before has
	// completed, so that the queue is empty and both pollers wait in their
	// long poll: the queue's own latency, nothing queued before it.
	queueJobs    = 20
	endPollEvery = 20 * time.Millisecond // GetItem of the job, to see it end
	// costJobs follow, one at a time too, metered by AWS's rules (cost.go).
	costJobs = 10

	// runsWorkspace may hold this many jobs at once, and run as many: the
	// bench's jobs never wait in a backlog.
	runsWorkspace = "ws_bench_runs"
	runsLimit     = 100

	// jobWait bounds one job's wait: the worker's timeout in template.yaml.
	jobWait = 2 * time.Minute
	// Each phase stops here, whatever is left, so that a stalled worker
	// cannot hold the bench for runJobs times jobWait.
	queuePhaseLimit = 90 * time.Second
	runPhaseLimit   = 3 * time.Minute
)

// runReport is both phases of the job runs.
type runReport struct {
	srcBytes int    // the uploaded PNG
	loadAvg  string // 1-minute load average as the runs began

	// One job at a time, on an idle queue; from the creation's answer read
	// to the worker's handler receiving the message, and to the worker's
	// first status write (the claim) acknowledged by DynamoDB.
	delivered, claimed []time.Duration
	queueErrs          []string

	// runJobs jobs, runInFlight at a time.
	done                       []time.Duration // creation answered -> completed seen
	doneDelivered, doneClaimed []time.Duration
	elapsed                    time.Duration // first creation sent -> last completion seen
	runErrs                    []string

	// What one job consumed (cost.go), and one run of the sweeper.
	usage      jobUsage
	sweeper    usage
	sweeperRun time.Duration
	sweeperErr error

	// The check of one result: what it is, or why it is not what was asked.
	result    string
	resultErr error
}

func (r *runReport) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(len(r.done)) / r.elapsed.Seconds()
}

// measureRuns serves the API on a table, queue and buckets of its own, plays
// the template's SQS mapping and schedule with triggers.Start as `make run`
// does, uploads the source photo and times jobs: first the queue's latency,
// then creation to completion.
func measureRuns(ctx context.Context, tpl *sam.Template, clients *devstack.Stack, src []byte) (*runReport, error) {
	// The functions get a DynamoDB client of their own that notes each job's
	// first status write past queued; the bench reads with the plain one.
	marks := &jobMarks{}
	m := newMeter(clients.DynamoDB)
	db := dynamodb.New(clients.DynamoDB.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(slices.Clone(o.APIOptions), marks.claimed.firstStatusWrite)
		o.APIOptions = append(o.APIOptions, m.apiOptions()...)
		o.APIOptions = append(o.APIOptions, marks.trace.Middleware)
	})
	q := sqs.New(clients.SQS.Options(), func(o *sqs.Options) {
		o.APIOptions = append(slices.Clone(o.APIOptions), m.count, marks.trace.Middleware)
	})
	s3c := s3.New(clients.S3.Options(), func(o *s3.Options) { o.APIOptions = append(slices.Clone(o.APIOptions), m.count) })
	local := devstack.New(db, q, s3c, "")
	local.UseMoto(clients.MotoEndpoint)
	// The functions build their own clients (as in Lambda): the same notes.
	local.FunctionAPIOptions = append([]func(*middleware.Stack) error{marks.claimed.firstStatusWrite, marks.trace.Middleware}, m.apiOptions()...)
	local.Table, local.JobsQueue = "genjobs-bench-runs", "genjobs-bench-runs-jobs"
	local.ResultsBucket, local.AssetsBucket = "genjobs-bench-runs-results", "genjobs-bench-runs-assets"
	st := store.New(clients.DynamoDB, local.Table)
	served, token, err := serveBench(ctx, tpl, local, st, runsWorkspace, runsLimit)
	if err != nil {
		return nil, err
	}
	defer served.close()
	worker := &runTimes{}
	sweep := unmeterSweeper(served.handlers)
	for id, h := range served.handlers {
		if h.SQS != nil {
			h.SQS = traced(&marks.trace, id, marks.delivered.onDelivery(h.SQS))
			if id == "WorkerFunction" || id == "LightWorkerFunction" {
				h.SQS = timedBy(worker, h.SQS)
			}
			served.handlers[id] = h
		}
	}
	o := local.TriggerOptions()
	o.ScheduleEvery, o.Log = triggers.DefaultScheduleEvery, slog.New(slog.DiscardHandler)
	stopTriggers, err := playTriggers(ctx, tpl, served.handlers, o)
	if err != nil {
		return nil, err
	}
	defer stopTriggers()

	c := newRESTClient(served.url, token, 30*time.Second, 2*runInFlight)
	assetURL, err := c.uploadPNG(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("upload the source photo: %w", err)
	}
	rep := &runReport{srcBytes: len(src), loadAvg: loadAverage()}

	fmt.Fprintf(os.Stderr, "bench: %d jobs one at a time (queue latency)...\n", queueJobs)
	qctx, cancel := context.WithTimeout(ctx, queuePhaseLimit)
	ran := worker.len()
	measureQueue(qctx, c, st, marks, assetURL, rep)
	cancel()
	// What a job costs: a few more jobs one at a time, nobody polling the
	// API, with AWS's bill on (it slows writes down: the queue phase's run
	// times are the ones priced); the sweeper apart.
	fmt.Fprintf(os.Stderr, "bench: %d jobs one at a time, metered...\n", costJobs)
	runs := worker.since(ran)
	cctx, cancel := context.WithTimeout(ctx, queuePhaseLimit)
	m.bill.on.Store(true)
	before, done := m.snapshot(), 0
	for range costJobs {
		id, _, err := c.createEnhance(cctx, assetURL)
		if err == nil {
			err = awaitEnd(cctx, st, id)
		}
		if err != nil {
			rep.queueErrs = append(rep.queueErrs, "metered job: "+err.Error())
			continue
		}
		done++
	}
	rep.usage = perJob(m.snapshot().minus(before), done, runs)
	if sweep != nil {
		before = m.snapshot()
		start := time.Now()
		err := sweep(cctx, events.EventBridgeEvent{})
		rep.sweeperRun = time.Since(start)
		rep.sweeper, rep.sweeperErr = m.snapshot().minus(before), err
	}
	m.bill.on.Store(false)
	cancel()

	fmt.Fprintf(os.Stderr, "bench: %d enhance jobs to completion, %d in flight...\n", runJobs, runInFlight)
	rctx, cancel := context.WithTimeout(ctx, runPhaseLimit)
	resultURL := measureCompletion(rctx, c, marks, assetURL, rep)
	cancel()
	if resultURL != "" {
		rep.result, rep.resultErr = checkResult(ctx, c.http, resultURL, runSide, runSide)
	}
	return rep, ctx.Err()
}

// measureQueue creates queueJobs jobs one after another, each once the one
// before has ended, and notes when the worker received each and when it
// wrote its first status.
func measureQueue(ctx context.Context, c *restClient, st *store.Store, marks *jobMarks, assetURL string, rep *runReport) {
	for i := range queueJobs {
		if ctx.Err() != nil {
			rep.queueErrs = append(rep.queueErrs, fmt.Sprintf("stopped after %s with %d of %d jobs done: %v",
				queuePhaseLimit, i, queueJobs, ctx.Err()))
			return
		}
		traced := timeline.Enabled() && i == queueJobs-1
		sent := time.Now()
		if traced {
			marks.trace.Start()
		}
		id, answered, err := c.createEnhance(ctx, assetURL)
		marks.trace.Mark("creation answered", answered)
		if err == nil {
			err = awaitEnd(ctx, st, id)
		}
		if traced {
			marks.trace.Print(os.Stderr, "the last queue job, sent to seen completed", sent)
		}
		if err == nil {
			err = marks.since(id, answered, &rep.delivered, &rep.claimed)
		}
		if err != nil {
			rep.queueErrs = append(rep.queueErrs, err.Error())
		}
	}
}

// awaitEnd reads job id until it has ended; anything but completed is an
// error.
func awaitEnd(ctx context.Context, st *store.Store, id string) error {
	deadline := time.Now().Add(jobWait)
	for {
		sent := time.Now()
		j, err := st.Job(ctx, id)
		switch {
		case err != nil:
			return fmt.Errorf("job %s: %w", id, err)
		case j.Status == job.Completed:
			return nil
		case j.Status.Terminal():
			return jobEnded(id, j.Status, j.Error)
		case time.Now().After(deadline):
			return fmt.Errorf("job %s still %s %s after its creation", id, j.Status, jobWait)
		}
		sleepUntil(ctx, sent.Add(endPollEvery))
	}
}

// measureCompletion creates runJobs jobs from runInFlight clients, each
// creating its next job once its last has completed, and returns the first
// completed job's first result URL.
func measureCompletion(ctx context.Context, c *restClient, marks *jobMarks, assetURL string, rep *runReport) string {
	var (
		issued    atomic.Int64
		mu        sync.Mutex
		resultURL string
		last      time.Time // the last completion seen
		wg        sync.WaitGroup
	)
	start := time.Now()
	for range runInFlight {
		wg.Go(func() {
			for ctx.Err() == nil && issued.Add(1) <= runJobs {
				id, answered, err := c.createEnhance(ctx, assetURL)
				var rec jobRecord
				var completed time.Time
				if err == nil {
					rec, completed, err = c.awaitCompleted(ctx, id)
				}
				mu.Lock()
				if err == nil {
					err = marks.since(id, answered, &rep.doneDelivered, &rep.doneClaimed)
				}
				if err != nil {
					rep.runErrs = append(rep.runErrs, err.Error())
				} else {
					rep.done = append(rep.done, completed.Sub(answered))
					if completed.After(last) {
						last = completed
					}
					if resultURL == "" && rec.Result != nil && len(rec.Result.URLs) > 0 {
						resultURL = rec.Result.URLs[0]
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n := len(rep.done) + len(rep.runErrs); n < runJobs {
		rep.runErrs = append(rep.runErrs, fmt.Sprintf("stopped after %s with %d of %d jobs done: %v",
			runPhaseLimit, n, runJobs, ctx.Err()))
	}
	if !last.IsZero() {
		rep.elapsed = last.Sub(start)
	}
	return resultURL
}

// checkResult downloads a result and checks that it is a JPEG of w x h.
func checkResult(ctx context.Context, client *http.Client, url string, w, h int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("download result: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("download result: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download result: %d %s", resp.StatusCode, firstLine(string(data)))
	}
	m, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("result of %d B is not a JPEG: %w", len(data), err)
	}
	if b := m.Bounds(); b.Dx() != w || b.Dy() != h {
		return "", fmt.Errorf("result is a %dx%d JPEG, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	return fmt.Sprintf("%dx%d JPEG, %s B", w, h, commas(int64(len(data)))), nil
}

// stamps are one instant per job id: the first one noted.
type stamps struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *stamps) note(id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string]time.Time{}
	}
	if _, ok := s.at[id]; !ok {
		s.at[id] = at
	}
}

func (s *stamps) get(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[id]
	return t, ok
}

// onDelivery wraps an SQS handler: it notes when each job's message first
// reached the function, the end of the queue's delivery.
func (s *stamps) onDelivery(h triggers.SQSHandler) triggers.SQSHandler {
	return func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
		now := time.Now()
		for _, r := range e.Records {
			var m queue.Message
			if json.Unmarshal([]byte(r.Body), &m) == nil && m.JobID != "" {
				s.note(m.JobID, now)
			}
		}
		return h(ctx, e)
	}
}

// firstStatusWrite is a middleware of the functions' DynamoDB client: it
// notes when DynamoDB acknowledged each job's first UpdateItem that left the
// job past queued. A job is created by a TransactWriteItems, so its first
// such UpdateItem is the worker's claim (queued -> processing). It reads the
// job's id and status from the item the store asks back (ALL_NEW), not from
// the store's key layout.
func (s *stamps) firstStatusWrite(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchFirstStatusWrite",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			at := time.Now()
			if u, ok := out.Result.(*dynamodb.UpdateItemOutput); ok && err == nil {
				id, st := stringAttr(u.Attributes, "job_id"), stringAttr(u.Attributes, "status")
				if id != "" && st != "" && st != string(job.Queued) && st != string(job.Backlogged) {
					s.note(id, at)
				}
			}
			return out, md, err
		}), middleware.After)
}

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// jobMarks are what the bench notes of each job inside the stack.
type jobMarks struct {
	delivered stamps            // the worker's handler received its message
	claimed   stamps            // the worker's first status write was acknowledged
	trace     timeline.Timeline // BENCH_TRACE: the last queue job's timeline
}

// since appends to delivered and claimed the time from t to each mark of
// job id; a job that completed without both marks is an error.
func (m *jobMarks) since(id string, t time.Time, delivered, claimed *[]time.Duration) error {
	d, ok1 := m.delivered.get(id)
	c, ok2 := m.claimed.get(id)
	if !ok1 || !ok2 {
		return fmt.Errorf("job %s completed, but the bench saw no delivery (%v) or no claim (%v)", id, ok1, ok2)
	}
	*delivered = append(*delivered, d.Sub(t))
	*claimed = append(*claimed, c.Sub(t))
	return nil
}

// restClient calls the local API as one workspace.
type restClient struct {
	http  *http.Client
	base  string
	token string
}

// newRESTClient keeps up to idle connections open; no proxy: the traffic
// stays on 127.0.0.1.
func newRESTClient(baseURL, token string, timeout time.Duration, idle int) *restClient {
	return &restClient{
		http:  &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: idle}},
		base:  baseURL,
		token: token,
	}
}

// do sends one request and returns the body of a want answer; any other
// status is an error.
func (c *restClient) do(ctx context.Context, method, path, contentType string, body []byte, want int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// uploadPNG stores a PNG by POST /assets and returns its asset URL.
func (c *restClient) uploadPNG(ctx context.Context, data []byte) (string, error) {
	body, err := c.do(ctx, http.MethodPost, "/assets", "image/png", data, http.StatusCreated)
	if err != nil {
		return "", err
	}
	var a struct {
		URL string `json:"asset_url"`
	}
	if err := json.Unmarshal(body, &a); err != nil || a.URL == "" {
		return "", fmt.Errorf("no asset_url in %s", body)
	}
	return a.URL, nil
}

// enhancePath is the endpoint of every job the runs create.
const enhancePath = "/generate/enhance/vendor-a/standard-enhance"

// createEnhance creates a runSide x runSide enhance of the asset and returns
// the job's id and when the creation's answer had been read.
func (c *restClient) createEnhance(ctx context.Context, assetURL string) (string, time.Time, error) {
	req, _ := json.Marshal(map[string]any{
		"width": runSide, "height": runSide, "image_url": assetURL,
		"model": "Standard V2", "output_format": runFormat,
	})
	body, err := c.do(ctx, http.MethodPost, enhancePath, "application/json", req, http.StatusOK)
	answered := time.Now()
	if err != nil {
		return "", answered, err
	}
	var rec jobRecord
	if err := json.Unmarshal(body, &rec); err != nil || rec.ID == "" {
		return "", answered, fmt.Errorf("no job_id in %s", body)
	}
	return rec.ID, answered, nil
}

// jobRecord is what the bench reads of GET /jobs/{id}.
type jobRecord struct {
	ID     string     `json:"job_id"`
	Status job.Status `json:"status"`
	Result *struct {
		URLs []string `json:"urls"`
	} `json:"result"`
	Error *job.Error `json:"error"`
}

// awaitCompleted reads GET /jobs/{id} every runPollEvery until the job has
// ended, and returns its record and when the read that showed it completed
// returned; any other end is an error.
func (c *restClient) awaitCompleted(ctx context.Context, id string) (jobRecord, time.Time, error) {
	deadline := time.Now().Add(jobWait)
	for {
		sent := time.Now()
		body, err := c.do(ctx, http.MethodGet, "/jobs/"+id, "", nil, http.StatusOK)
		got := time.Now()
		if err != nil {
			return jobRecord{}, got, err
		}
		var rec jobRecord
		if err := json.Unmarshal(body, &rec); err != nil {
			return rec, got, fmt.Errorf("GET /jobs/%s: %w", id, err)
		}
		switch {
		case rec.Status == job.Completed:
			return rec, got, nil
		case rec.Status.Terminal():
			return rec, got, jobEnded(id, rec.Status, rec.Error)
		case got.After(deadline):
			return rec, got, fmt.Errorf("job %s still %s %s after its creation", id, rec.Status, jobWait)
		}
		sleepUntil(ctx, sent.Add(runPollEvery))
	}
}

// jobEnded is the error of a job that ended other than completed.
func jobEnded(id string, st job.Status, e *job.Error) error {
	if e != nil {
		return fmt.Errorf("job %s %s: %s: %s", id, st, e.Code, e.Message)
	}
	return fmt.Errorf("job %s %s", id, st)
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}
