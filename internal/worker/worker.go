// Package worker runs jobs from the jobs queue: it claims a job with a lease,
// fetches its inputs, runs its engine while reporting progress, stores the
// outputs and ends the job, every status change through the store's one
// conditional transition. At-least-once delivery is safe: a job someone else
// holds or that has ended is acknowledged and dropped, and only the lease
// holder can complete a job, once.
package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/asset"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/engine"
	"genjobs/internal/fetch"
	"genjobs/internal/imagetype"
	"genjobs/internal/job"
	"genjobs/internal/lifecycle"
	"genjobs/internal/metrics"
	"genjobs/internal/sqsbatch"
)

// Store reads and moves jobs (store.Store).
type Store interface {
	Job(ctx context.Context, id string) (*job.Job, error)
	// JobRequest reads the job's request, kept apart from the job's item.
	JobRequest(ctx context.Context, id string) (json.RawMessage, error)
	Transition(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error)
}

// Inputs fetches one image-valued input (fetch.Fetcher).
type Inputs interface {
	Fetch(ctx context.Context, field, ref string) (fetch.Image, error)
}

// Blobs stores output files and reads uploaded assets (blob.Store, through
// the wiring's shim: workerfn.Blobs).
type Blobs interface {
	PutResult(ctx context.Context, key, contentType string, data []byte) error
	// CreateResult starts the upload of an output the engine streams.
	CreateResult(ctx context.Context, key, contentType string) Upload
	DeleteResult(ctx context.Context, key string) error
	// ReadAsset reads an uploaded asset's file: ErrNotUploaded when the
	// bucket has none, ErrTooLarge when it holds more than max bytes.
	ReadAsset(ctx context.Context, key string, max int64) ([]byte, string, error)
}

// Upload is one output streamed to the results bucket as the engine writes
// it (blob.Upload). Close completes it; Abort gives it up, from any
// goroutine, leaving nothing behind. Its requests run on the context
// CreateResult was given.
type Upload interface {
	io.Writer
	Close() error
	Abort(ctx context.Context) error
}

// Errors of Blobs.ReadAsset.
var (
	ErrNotUploaded = errors.New("worker: the asset's file is not in the bucket")
	ErrTooLarge    = errors.New("worker: the asset's file is larger than allowed")
)

// Enqueuer sends a job to the queue of its lane (queue.JobSender).
type Enqueuer interface {
	Enqueue(ctx context.Context, j *job.Job) error
}

// Redeliverer makes a received message visible again after a wait
// (queue.Redeliverer).
type Redeliverer interface {
	Redeliver(ctx context.Context, queueARN, receiptHandle string, after time.Duration) error
}

// AssetRecords finds uploaded assets (store.Store).
type AssetRecords interface {
	Asset(ctx context.Context, id string) (asset.Asset, error)
}

// Message is the body of a jobs-queue message as the worker reads it
// (queue.JobSender writes it): only the job's id, so the worker always
// reads the job's current state from the table.
type Message struct {
	JobID string `json:"job_id"`
}

// Valid reports whether m names a job.
func (m Message) Valid() bool { return job.ValidID(m.JobID) }

// Worker runs jobs. Build it once per function instance.
type Worker struct {
	Store Store
	// Ender ends a job (completed or failed) and promotes the backlog
	// behind it: the one settlement path, straight to store.Transition.
	Ender   *lifecycle.Ender
	Catalog *catalog.Catalog
	Engines engine.Registry
	Inputs  Inputs
	Blobs   Blobs
	Assets  AssetRecords
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Emitter // queue wait and run time by model; nil: none
	// MaxSourcePixels, when set, makes this worker (the light one) hand a
	// job whose source image is larger to the heavy lane through Handover,
	// instead of running out of memory on it. 0: any size.
	MaxSourcePixels int
	Handover        Enqueuer
	// Retry makes the message of a failed attempt visible again after a
	// short wait (RetryDelay), rather than after the queue's visibility
	// timeout (12 minutes); nil: the queue's own timeout.
	Retry Redeliverer
	// LeaseFor is how long a claim keeps other workers out without a
	// heartbeat; longer than the function's timeout, far shorter than the
	// queue's visibility timeout (a crashed attempt's message comes back
	// after the lease has lapsed).
	LeaseFor time.Duration
	// Heartbeat is how often the engine's job is looked at while it works:
	// under a second, so a cancellation is noticed in time. A beat writes
	// (progress, preview, lease) only when something is due (attempt.due),
	// and otherwise reads the job's small item: a read costs a fifth of a
	// write.
	Heartbeat time.Duration
	// ProgressEvery is the least time between two writes of progress alone;
	// DefaultProgressEvery if 0.
	ProgressEvery time.Duration
}

// Defaults for LeaseFor and Heartbeat.
const (
	DefaultLeaseFor      = 150 * time.Second // the worker's 120 s timeout plus a margin
	DefaultHeartbeat     = 500 * time.Millisecond
	DefaultProgressEvery = 2 * time.Second
)

// HandleSQS runs each message's job and reports the messages to retry; the
// rest are deleted by the event source mapping.
func (w *Worker) HandleSQS(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Batch[Message]{
		Handle: func(ctx context.Context, _ events.SQSMessage, m Message) error { return w.Run(ctx, m.JobID) },
		Failed: w.failed,
		Log:    w.Log,
	}.Run(ctx, e)
}

// failed logs a failed attempt and asks for its message back after
// retryAfter.
func (w *Worker) failed(ctx context.Context, m events.SQSMessage, msg Message, err error) {
	after := w.retryAfter(m, err)
	w.Log.Error("job attempt failed; the message will be retried",
		"job_id", msg.JobID, "message_id", m.MessageId, "error", err.Error(), "retry_in", after.String())
	w.redeliver(ctx, m, after)
}

// RetryDelay is the wait before the next delivery of a message whose
// attempt failed, by how many times it was received: a second try soon, a
// third after a pause (a short outage of S3 or DynamoDB may have passed).
// After MaxReceiveCount receives the queue moves the message to its DLQ and
// the sweeper fails the job.
func RetryDelay(receives int) time.Duration {
	switch {
	case receives <= 1:
		return time.Second
	case receives == 2:
		return 10 * time.Second
	}
	return time.Minute
}

// maxVisibility is the longest wait SQS takes (12 hours).
const maxVisibility = 12 * time.Hour

// retryAfter is when the message of a failed attempt comes back: after
// RetryDelay, and not before a lease the attempt may still hold has
// lapsed (a retry that found it held would drop the message).
func (w *Worker) retryAfter(m events.SQSMessage, err error) time.Duration {
	receives, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	after := RetryDelay(receives)
	var held *leaseKept
	if errors.As(err, &held) {
		after = max(after, held.until.Sub(w.Clock.Now())+time.Second)
	}
	return min(after, maxVisibility)
}

// redeliver asks the queue for the message again after the wait, on a
// context of its own (the attempt's may have ended). Should it fail, the
// message comes back after the queue's visibility timeout.
func (w *Worker) redeliver(ctx context.Context, m events.SQSMessage, after time.Duration) {
	if w.Retry == nil || m.ReceiptHandle == "" {
		return
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := w.Retry.Redeliver(ctx, m.EventSourceARN, m.ReceiptHandle, after); err != nil {
		w.Log.Warn("could not shorten the failed message's wait; it comes back after the queue's visibility timeout",
			"message_id", m.MessageId, "error", err.Error())
	}
}

// leaseKept: an attempt failed while a lease may still keep other workers
// out of the job until the time given (its release or claim failed).
type leaseKept struct {
	err   error
	until time.Time
}

func (e *leaseKept) Error() string { return e.err.Error() }
func (e *leaseKept) Unwrap() error { return e.err }

// Run works on one job. It returns nil when the message is done with (the
// job ended, or needs nothing from this message) and an error when the
// message must come back for another attempt.
func (w *Worker) Run(ctx context.Context, id string) error {
	log := w.Log.With("job_id", id)
	// The request is read while the job is, and the inputs while the claim
	// is written (prefetch): a job's wait for its engine is two round trips
	// and the inputs' read, not six in a row. What they find is acted on
	// only once the claim holds.
	pctx, stopPrefetch := context.WithCancel(ctx)
	pre := &prefetch{request: make(chan struct{}), inputs: make(chan struct{})}
	fetching := false
	defer func() {
		stopPrefetch() // a job not run here: what is still being read stops
		<-pre.request
		if fetching {
			<-pre.inputs
		}
	}()
	go func() {
		defer close(pre.request)
		pre.reqErr = recovered(func() error {
			var err error
			pre.req, err = w.Store.JobRequest(pctx, id)
			return err
		})
	}()
	j, err := w.Store.Job(ctx, id)
	switch {
	case errors.Is(err, job.ErrNotFound):
		log.Warn("dropping a message for an unknown job")
		return nil
	case err != nil:
		return err
	case j.Status.Terminal(), j.Status == job.Backlogged:
		// Ended, or not yet promoted (promotion enqueues it again).
		log.Info("dropping a message for a job that needs no work", "status", string(j.Status))
		return nil
	case j.Lease.Held(w.Clock.Now()):
		// Another worker has it; if that one crashes, its own message
		// comes back after the lease has lapsed.
		log.Info("dropping a duplicate message: another worker holds the job")
		return nil
	case w.Handover != nil && j.Lane == lifecycle.LaneHeavy:
		// Handed over already (a retry of a hand-over whose send failed):
		// send it where it now lives.
		if err := w.Handover.Enqueue(ctx, j); err != nil {
			return err
		}
		log.Info("job sent on to the heavy worker, its lane")
		return nil
	}
	log = log.With("workspace_id", j.WorkspaceID, "endpoint", j.Endpoint)

	// The claim starts the job: processing, the inputs on their way. A
	// retry after a crash resumes where it was.
	lease := job.Lease{ID: newLeaseID(), Until: w.Clock.Now().Add(w.LeaseFor)}
	start := job.Processing
	if !j.Status.CanMoveTo(start) {
		start = j.Status
	}
	fetching = true
	go w.fetchInputs(pctx, j, pre)
	j, err = w.Store.Transition(ctx, j, job.Change{To: start, Lease: &lease}, w.Clock.Now())
	if errors.Is(err, job.ErrConflict) {
		log.Info("another worker claimed the job first")
		return nil
	}
	if err != nil {
		// The claim may have been written all the same: a retry waits for
		// the lease it may hold.
		return &leaseKept{err: err, until: lease.Until}
	}
	log = log.With("attempt", j.Attempts)
	log.Info("job claimed")
	claimed := w.Clock.Now()
	if j.QueuedAt != nil && j.Attempts == 1 {
		w.Metrics.Duration(metrics.QueueWait, j.Model(), claimed.Sub(*j.QueuedAt))
	}
	a := &attempt{w: w, j: j, lease: lease, log: log, pre: pre}
	defer func() { w.Metrics.Duration(metrics.RunTime, j.Model(), w.Clock.Now().Sub(claimed)) }()
	if err := a.run(ctx); err != nil {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if !a.released && !a.release(cctx) {
			return &leaseKept{err: err, until: a.lease.Until}
		}
		return err
	}
	return nil
}

// CleanupTimeout bounds the writes an attempt still makes once its context
// may have ended (giving up the lease, deleting a cancelled job's outputs):
// they fit in the time the handler keeps before the invocation's deadline
// (app.EventMargin), so they never hold a batch past it.
const CleanupTimeout = 2 * time.Second

func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}

// release gives up the lease after an attempt that failed for a reason of
// ours, so that the message's next delivery can claim the job at once. It
// reports whether the lease is gone (given up, or lost to a cancellation
// or a takeover).
func (a *attempt) release(ctx context.Context) bool {
	now := a.w.Clock.Now()
	gone := job.Lease{ID: a.lease.ID, Until: now.Add(-time.Millisecond)}
	j := a.j
	for range 3 {
		cur, err := a.w.Store.Transition(ctx, j, job.Change{To: j.Status, Holder: a.lease.ID, Lease: &gone}, now)
		switch {
		case err == nil:
			return true
		case !errors.Is(err, job.ErrConflict):
			a.log.Warn("could not release the lease; the next attempt waits for it to lapse", "error", err.Error())
			return false
		case cur == nil || cur.Status.Terminal() || cur.Lease.ID != a.lease.ID:
			return true // lost to a cancellation or a takeover
		}
		// Still our lease, in a later status: a write of ours whose answer
		// the failure cut off (a heartbeat's sampling) went through. Give
		// the lease up where the job now is.
		j = cur
	}
	a.log.Warn("could not release the lease; the next attempt waits for it to lapse", "status", j.Status)
	return false
}

// attempt is one worker's go at one job, from claim to end.
type attempt struct {
	w       *Worker
	j       *job.Job
	lease   job.Lease
	log     *slog.Logger
	written time.Time // the last write of the job's item
	// released: the lease is given up (a hand-over), so a failure after it
	// has none to give.
	released bool
	pre      *prefetch
}

// prefetch is what Run reads before the claim holds: the job's request,
// then its inputs. Each channel is closed when its part is done.
type prefetch struct {
	request chan struct{}
	req     json.RawMessage
	reqErr  error

	inputs    chan struct{}
	params    map[string]any
	paramsErr error // the stored request is not JSON
	images    []fetched
}

// fetched is one image input as read, or why it could not be.
type fetched struct {
	ref catalog.ImageRef
	img fetch.Image
	err error
}

// fetchInputs reads the job's image inputs once its request is in, and
// closes pre.inputs. It reads nothing for a job whose endpoint or engine
// is unknown (the attempt fails it) or whose request could not be read.
func (w *Worker) fetchInputs(ctx context.Context, j *job.Job, pre *prefetch) {
	defer close(pre.inputs)
	<-pre.request
	ep, ok := w.Catalog.ByPath(j.Endpoint)
	if _, known := w.Engines.For(j.Model()); !ok || !known || pre.reqErr != nil {
		return
	}
	if pre.paramsErr = json.Unmarshal(pre.req, &pre.params); pre.paramsErr != nil {
		return
	}
	a := &attempt{w: w, j: j}
	for _, ref := range ep.ImageRefs(pre.params) {
		var img fetch.Image
		err := recovered(func() error {
			var err error
			img, err = a.input(ctx, ref)
			return err
		})
		pre.images = append(pre.images, fetched{ref: ref, img: img, err: err})
		if err != nil {
			return // the first failure decides
		}
	}
}

// recovered runs f, a read of Run's own goroutines, and turns a panic in it
// into an error of the attempt's (retried), as a panic in Run's goroutine
// fails only its message.
func recovered(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// errStopped: the job was cancelled or taken over, so this attempt stops
// without writing anything more.
var errStopped = errors.New("the job was cancelled or taken over")

func (a *attempt) run(ctx context.Context) error {
	w := a.w
	_, ok := w.Catalog.ByPath(a.j.Endpoint)
	eng, known := w.Engines.For(a.j.Model())
	if !ok || !known {
		return a.fail(ctx, job.CodeInternal, "This model cannot be run.", fmt.Errorf("no engine for %s", a.j.Endpoint))
	}
	pre := a.pre
	<-pre.inputs
	if pre.reqErr != nil {
		return pre.reqErr // ours: retry
	}
	request := pre.req
	if pre.paramsErr != nil {
		return a.fail(ctx, job.CodeInternal, "The stored request could not be read.", pre.paramsErr)
	}
	var inputs []engine.Input
	for _, f := range pre.images {
		ref, img, err := f.ref, f.img, f.err
		switch {
		case errors.Is(err, fetch.ErrBlocked):
			return a.fail(ctx, job.CodeInputBlocked, err.Error(), nil)
		case errors.Is(err, fetch.ErrInvalid):
			return a.fail(ctx, job.CodeInvalidInput, err.Error(), nil)
		case err != nil:
			return fmt.Errorf("fetch %s: %w", ref.Name(), err) // ours, not the client's: retry
		}
		inputs = append(inputs, engine.Input{Field: ref.Field, Index: ref.Index, ContentType: img.ContentType, Data: img.Data})
	}
	if a.tooLarge(inputs) {
		return a.handOver(ctx)
	}

	out := &outputs{blobs: w.Blobs, jobID: a.j.ID}
	// Nothing of an attempt that does not complete the job remains: a retry
	// writes its outputs anew, a failed or cancelled job has none.
	kept := false
	defer func() {
		if !kept {
			a.discard(ctx, out)
		}
	}()
	files, err := a.runEngine(ctx, eng, engine.Job{Model: a.j.Model(), Request: request, Inputs: inputs}, out)
	a.abortOpen(ctx, out) // a file not closed when Run returns is never kept in part
	switch {
	case errors.Is(err, errStopped):
		return a.stopped(err)
	case ctx.Err() != nil:
		return ctx.Err() // out of time: the message comes back
	case out.failure() != nil:
		// S3 failed under the engine, which is no fault of the job's: retry.
		return fmt.Errorf("store a streamed output: %w", out.failure())
	case errors.Is(err, engine.ErrInvalidInput):
		return a.fail(ctx, job.CodeInvalidInput, err.Error(), nil)
	case err != nil:
		return a.fail(ctx, job.CodeEngineError, "The engine failed to produce the output.", err)
	}

	keys := out.complete()
	for _, f := range files { // returned whole: stored after the streamed ones
		key := out.key(f.Ext)
		if err := w.Blobs.PutResult(ctx, key, f.ContentType, f.Data); err != nil {
			return fmt.Errorf("store output %s: %w", key, err)
		}
		out.stored = append(out.stored, key)
		keys = append(keys, key)
	}
	// From here the outputs are kept unless the job is cancelled: an End
	// that fails otherwise may have been written all the same.
	kept = true
	done := 1.0
	_, err = w.Ender.End(ctx, a.j, job.Change{To: job.Completed, Progress: &done, Outputs: keys, Holder: a.lease.ID})
	if errors.Is(err, job.ErrConflict) {
		// Cancelled while the outputs were being stored: nothing of this
		// attempt may remain.
		a.discard(ctx, out)
		return a.stopped(errStopped)
	}
	if err != nil {
		return err
	}
	a.log.Info("job completed", "outputs", len(keys))
	return nil
}

// tooLarge tells whether a source is larger than this worker takes: a
// light job's source is not known until it is fetched.
func (a *attempt) tooLarge(inputs []engine.Input) bool {
	if a.w.MaxSourcePixels <= 0 || a.w.Handover == nil {
		return false
	}
	for _, in := range inputs {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(in.Data))
		if err == nil && int64(cfg.Width)*int64(cfg.Height) > int64(a.w.MaxSourcePixels) {
			return true
		}
	}
	return false
}

// handOver moves the job to the heavy lane: one write records the new lane
// and gives up the lease, and only then is the job sent to the heavy queue,
// so that the heavy worker finds it free and claims it at once (sent
// first, the heavy worker could read the job while this lease still held
// it, and drop its only message). The light message is then done with. A
// send that fails brings it back, and its next delivery sends the job on
// (Run); a re-send by the sweeper goes to the heavy queue too, the job's
// lane.
func (a *attempt) handOver(ctx context.Context) error {
	now := a.w.Clock.Now()
	gone := job.Lease{ID: a.lease.ID, Until: now.Add(-time.Millisecond)}
	j, err := a.w.Store.Transition(ctx, a.j, job.Change{To: a.j.Status, Holder: a.lease.ID, Lease: &gone, Lane: lifecycle.LaneHeavy}, now)
	if errors.Is(err, job.ErrConflict) {
		return a.stopped(errStopped)
	}
	if err != nil {
		return err // the lease stays: Run reports it kept
	}
	a.j, a.released = j, true
	if err := a.w.Handover.Enqueue(ctx, j); err != nil {
		return err
	}
	a.log.Info("job handed to the heavy worker: its source is larger than this worker takes")
	return nil
}

// abortOpen aborts the uploads of the files the engine did not close, on a
// context of its own: the attempt's may be the reason they are open.
func (a *attempt) abortOpen(ctx context.Context, out *outputs) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	for _, f := range out.open() {
		if err := f.up.Abort(ctx); err != nil {
			a.log.Warn("could not abort the upload of an output; the bucket's lifecycle rule removes it within a day",
				"key", f.key, "error", err.Error())
		}
	}
}

// discard deletes the outputs the attempt stored, on a context of its own.
func (a *attempt) discard(ctx context.Context, out *outputs) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	for _, k := range append(out.complete(), out.stored...) {
		if err := a.w.Blobs.DeleteResult(ctx, k); err != nil {
			a.log.Warn("could not delete the output of an attempt that did not complete", "key", k, "error", err.Error())
		}
	}
}

// outputs is the engine.Sink of one attempt: each file the engine creates
// goes up to the results bucket as it is written, under
// results/<job id>/<i>.<ext>, numbered in the order created; the files the
// engine returns whole are numbered after them.
type outputs struct {
	blobs  Blobs
	jobID  string
	ctx    context.Context // the engine's: its end (a stop) fails the writes
	stored []string        // keys of the whole files stored

	mu    sync.Mutex
	files []*output
	n     int // keys handed out
}

type output struct {
	key      string
	up       Upload
	complete bool  // Close returned nil
	err      error // the upload's first failure
}

func (o *outputs) key(ext string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := fmt.Sprintf("results/%s/%d.%s", o.jobID, o.n, ext)
	o.n++
	return k
}

// Create implements engine.Sink.
func (o *outputs) Create(contentType, ext string) (io.WriteCloser, error) {
	key := o.key(ext)
	f := &output{key: key, up: o.blobs.CreateResult(o.ctx, key, contentType)}
	o.mu.Lock()
	o.files = append(o.files, f)
	o.mu.Unlock()
	return &outputFile{o: o, f: f}, nil
}

// outputFile notes how its upload ends, so that the worker knows which
// files are complete and whether S3 failed.
type outputFile struct {
	o *outputs
	f *output
}

func (w *outputFile) Write(p []byte) (int, error) {
	n, err := w.f.up.Write(p)
	w.o.note(w.f, err, false)
	return n, err
}

func (w *outputFile) Close() error {
	err := w.f.up.Close()
	w.o.note(w.f, err, err == nil)
	return err
}

func (o *outputs) note(f *output, err error, complete bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
	f.complete = f.complete || complete
}

// failure is the first failure of an upload. The caller has ruled out a
// stop and a timeout, which fail the uploads too.
func (o *outputs) failure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.files {
		if f.err != nil {
			return f.err
		}
	}
	return nil
}

// complete returns the keys of the complete files, in order.
func (o *outputs) complete() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var keys []string
	for _, f := range o.files {
		if f.complete {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// open returns the files that are not complete.
func (o *outputs) open() []*output {
	o.mu.Lock()
	defer o.mu.Unlock()
	var open []*output
	for _, f := range o.files {
		if !f.complete {
			open = append(open, f)
		}
	}
	return open
}

// input fetches one image: an asset of the job's own workspace from the
// assets bucket, anything else through the guarded fetcher. An asset's file
// is read where the job's workspace keeps it (asset.Key), with no read of
// its record first; only when there is no file there does the record say
// why: another workspace's asset, or one never uploaded.
func (a *attempt) input(ctx context.Context, ref catalog.ImageRef) (fetch.Image, error) {
	id, ok := asset.IDFromURL(a.j.BaseURL, ref.Ref)
	if !ok {
		return a.w.Inputs.Fetch(ctx, ref.Name(), ref.Ref)
	}
	data, _, err := a.w.Blobs.ReadAsset(ctx, asset.Key(a.j.WorkspaceID, id), asset.MaxUploadBytes)
	if errors.Is(err, ErrNotUploaded) {
		rec, rerr := a.w.Assets.Asset(ctx, id)
		if errors.Is(rerr, asset.ErrNotFound) || rerr == nil && rec.WorkspaceID != a.j.WorkspaceID {
			return fetch.Image{}, fetch.Invalid("%s: the asset was not found", ref.Name())
		}
		if rerr != nil {
			return fetch.Image{}, rerr
		}
	}
	switch {
	case errors.Is(err, ErrNotUploaded):
		return fetch.Image{}, fetch.Invalid("%s: the asset's file has not been uploaded", ref.Name())
	case errors.Is(err, ErrTooLarge):
		return fetch.Image{}, fetch.Invalid("%s: the asset is larger than 50 MiB", ref.Name())
	case err != nil:
		return fetch.Image{}, err
	}
	// A presigned upload is not checked when it lands: sniff it here.
	ct, ok := imagetype.Sniff(data)
	if !ok {
		return fetch.Image{}, fetch.Invalid("%s: the asset is not a PNG, JPEG or WebP image", ref.Name())
	}
	return fetch.Image{ContentType: ct, Data: data}, nil
}

// move writes a status (and progress or outputs) as the lease holder,
// renewing the lease.
func (a *attempt) move(ctx context.Context, to job.Status, progress *float64, outputs []string) error {
	if !a.j.Status.CanMoveTo(to) && a.j.Status != to {
		to = a.j.Status // never backwards: a resumed attempt stays where it was
	}
	a.lease.Until = a.w.Clock.Now().Add(a.w.LeaseFor)
	j, err := a.w.Store.Transition(ctx, a.j, job.Change{To: to, Progress: progress, Outputs: outputs, Holder: a.lease.ID, Lease: &a.lease}, a.w.Clock.Now())
	if errors.Is(err, job.ErrConflict) {
		return errStopped
	}
	if err != nil {
		return err
	}
	a.j, a.written = j, a.w.Clock.Now()
	return nil
}

// stopped ends an attempt that lost its job: the message is done with.
func (a *attempt) stopped(err error) error {
	if errors.Is(err, errStopped) {
		a.log.Info("attempt stopped: the job was cancelled or taken over")
		return nil
	}
	return err
}

// fail ends the job as failed with a message the client may read; cause,
// when set, is logged only.
func (a *attempt) fail(ctx context.Context, code, message string, cause error) error {
	l := a.log.With("code", code, "message", message)
	if cause != nil {
		l = l.With("cause", cause.Error())
	}
	_, err := a.w.Ender.End(ctx, a.j, job.Change{To: job.Failed, Error: &job.Error{Code: code, Message: message}, Holder: a.lease.ID})
	if errors.Is(err, job.ErrConflict) {
		return a.stopped(errStopped)
	}
	if err != nil {
		return err
	}
	l.Warn("job failed")
	return nil
}

// runEngine runs the engine while a heartbeat writes its progress (and
// renews the lease) every Heartbeat. A write that fails its condition (the
// job was cancelled or taken over) stops the engine within one heartbeat:
// its context ends, and so do the requests of the files it streams to out.
func (a *attempt) runEngine(ctx context.Context, eng engine.Engine, ej engine.Job, out *outputs) ([]engine.File, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out.ctx, ej.Outputs = ctx, out // a stop fails the uploads' next writes too

	var mu sync.Mutex
	var latest engine.Update
	var previewSent, stop bool
	report := func(u engine.Update) error {
		mu.Lock()
		defer mu.Unlock()
		if stop {
			return errStopped
		}
		if u.Progress > latest.Progress {
			latest.Progress = u.Progress
		}
		if u.Preview != nil && !previewSent && latest.Preview == nil {
			latest.Preview = u.Preview
		}
		return nil
	}

	beats := make(chan struct{})
	go func() {
		defer close(beats)
		t := time.NewTicker(a.w.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			mu.Lock()
			u := latest
			latest.Preview = nil
			mu.Unlock()
			if err := a.beat(ctx, u); err != nil {
				if ctx.Err() != nil {
					return // the engine has returned or the time is up: nothing more to report
				}
				if !errors.Is(err, errStopped) {
					a.log.Warn("progress write failed", "error", err.Error())
					mu.Lock()
					if latest.Preview == nil {
						latest.Preview = u.Preview // the next beat tries again
					}
					mu.Unlock()
					continue
				}
				mu.Lock()
				stop = true
				mu.Unlock()
				cancel(errStopped)
				return
			}
			if u.Preview != nil {
				mu.Lock()
				previewSent = true
				mu.Unlock()
			}
		}
	}()
	files, err := eng.Run(ctx, ej, report)
	cancel(nil)
	<-beats
	if errors.Is(context.Cause(ctx), errStopped) || errors.Is(err, errStopped) {
		return nil, errStopped
	}
	return files, err
}

// beat writes one heartbeat: sampling with the engine's progress (never
// below what is stored, so a resumed attempt does not go backwards), or
// intermediate-complete with the preview.
func (a *attempt) beat(ctx context.Context, u engine.Update) error {
	p := u.Progress
	if p >= 1 {
		p = 0.99 // 1 only on completed
	}
	if a.j.Progress != nil && *a.j.Progress > p {
		p = *a.j.Progress
	}
	if u.Preview == nil && !a.due(p) {
		return a.check(ctx)
	}
	if u.Preview == nil {
		return a.move(ctx, job.Sampling, &p, nil)
	}
	key := fmt.Sprintf("results/%s/preview.%s", a.j.ID, u.Preview.Ext)
	if err := a.w.Blobs.PutResult(ctx, key, u.Preview.ContentType, u.Preview.Data); err != nil {
		return fmt.Errorf("store preview: %w", err)
	}
	return a.move(ctx, job.IntermediateComplete, &p, []string{key})
}

// progressStep is the least rise of progress worth a write of its own.
const progressStep = 0.05

// due tells whether a beat without a preview must write: the job is not
// sampling yet, the lease has less than half its time left, or progress
// rose by progressStep and ProgressEvery has passed since the last write.
func (a *attempt) due(p float64) bool {
	now := a.w.Clock.Now()
	every := a.w.ProgressEvery
	if every <= 0 {
		every = DefaultProgressEvery
	}
	switch {
	case a.j.Status != job.Sampling && a.j.Status != job.IntermediateComplete:
		return true
	case a.lease.Until.Sub(now) < a.w.LeaseFor/2:
		return true
	case a.j.Progress == nil:
		return true
	}
	return p-*a.j.Progress >= progressStep && now.Sub(a.written) >= every
}

// check reads the job between writes, to notice a cancellation or a
// takeover as a failed write would.
func (a *attempt) check(ctx context.Context) error {
	j, err := a.w.Store.Job(ctx, a.j.ID)
	if err != nil {
		return err
	}
	if j.Status.Terminal() || j.Lease.ID != a.lease.ID {
		return errStopped
	}
	return nil
}

func newLeaseID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
