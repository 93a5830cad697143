package provider

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/asset"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/job"
	"genjobs/internal/provider/steps"
	"genjobs/internal/sqsbatch"
)

// Message is the body of a provider-queue message: one step of one job,
// of an explicit kind (package steps, which the queue adapter links).
type Message = steps.Message

// StepKind is what a step is asked to do.
type StepKind = steps.Kind

// The kinds of steps.
const (
	StepSubmit = steps.Submit
	StepPoll   = steps.Poll
	StepCopy   = steps.Copy
	StepCancel = steps.Cancel
)

// Store reads and writes jobs and their prediction state (store.Store).
type Store interface {
	// ProviderJob reads the job and its prediction state, without its
	// request (JobRequest reads that, for a submission).
	ProviderJob(ctx context.Context, id string) (*job.Job, job.Submission, error)
	JobRequest(ctx context.Context, id string) (json.RawMessage, error)
	Transition(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error)
	MarkSubmission(ctx context.Context, jobID, previous, marker, tokenHash, key string, at time.Time) error
	AddCallbackToken(ctx context.Context, jobID, tokenHash string) error
	RecordPrediction(ctx context.Context, jobID, marker, predictionID string) error
	StashCallback(ctx context.Context, jobID, blobKey string) error
	DropCallback(ctx context.Context, jobID, blobKey string) error
	MarkProviderCancelled(ctx context.Context, jobID string) error
}

// Ender ends a job through the one settlement path (lifecycle.Ender).
type Ender interface {
	End(ctx context.Context, j *job.Job, c job.Change) (*job.Job, error)
}

// Queue carries the steps (providerqueue.Queue).
type Queue interface {
	Schedule(ctx context.Context, m Message, delay time.Duration) error
}

// Upload is one result file streamed to the results bucket (blob.Upload).
type Upload interface {
	io.Writer
	Close() error
	Abort(ctx context.Context) error
}

// Blobs stores outputs and callbacks, and shares uploaded assets (blob.Store).
type Blobs interface {
	CreateResult(ctx context.Context, key, contentType string) Upload
	PutResult(ctx context.Context, key, contentType string, data []byte) error
	// PutAttachment stores a result that is no media file of the
	// service's: served as application/octet-stream, as an attachment.
	PutAttachment(ctx context.Context, key string, data []byte) error
	ReadResult(ctx context.Context, key string, max int64) ([]byte, error)
	DeleteResult(ctx context.Context, key string) error
	// DeleteResults removes every result under a key prefix.
	DeleteResults(ctx context.Context, prefix string) (int, error)
	SharedAssetURL(ctx context.Context, key string) (string, error)
}

// Assets finds uploaded assets (store.Store).
type Assets interface {
	Asset(ctx context.Context, id string) (asset.Asset, error)
}

// Runner runs the steps of routed jobs. Build it once per function instance.
type Runner struct {
	Store   Store
	Ender   Ender
	Queue   Queue
	Blobs   Blobs
	Assets  Assets
	Secrets Secrets
	Clients map[string]Client // by route: its endpoint path (providerwire.Clients)
	Routes  Routes
	Catalog *catalog.Catalog
	// Fetch is the network guard's transport, for output URLs; Trusted
	// sends, without the guard, the requests for exactly the job's route's
	// base_url host and port, which the operator configured. Each redirect
	// is judged anew (TrustedHosts).
	Fetch, Trusted http.RoundTripper
	Clock          clock.Clock
	Log            *slog.Logger
	Timings
}

// Timings are the waits of the steps; tests shorten them.
type Timings struct {
	// FirstPoll is the wait before the first read after a submission (at
	// most 30 s); later waits grow with the job's age up to MaxPoll.
	FirstPoll time.Duration
	MaxPoll   time.Duration
	// RetryBase is the first wait after a failed request; it doubles with
	// each failure, up to MaxPoll, unless the provider says Retry-After.
	RetryBase time.Duration
	// StepFor is how long a step holds the job: the function's timeout.
	StepFor time.Duration
	// InFlight: a submission marked less than this ago may still be
	// waiting for its answer (the client's timeout, with a margin).
	InFlight time.Duration
	// CancelFor is how long a cancellation is retried.
	CancelFor time.Duration
	// MaxOutputBytes caps each output file.
	MaxOutputBytes int64
}

// DefaultTimings are the production values.
var DefaultTimings = Timings{
	FirstPoll:      15 * time.Second,
	MaxPoll:        5 * time.Minute,
	RetryBase:      5 * time.Second,
	StepFor:        10 * time.Minute,
	InFlight:       time.Minute,
	CancelFor:      24 * time.Hour,
	MaxOutputBytes: 2 << 30,
}

// MaxCallbackBytes bounds a callback's body: a Lambda invocation takes at
// most 6 MB, so a Cog server whose outputs (data: URIs) are larger must
// upload them (Cog's --upload-url) and send URLs.
const MaxCallbackBytes = 6 << 20

// HandleSQS runs each message's step; a step that could not run (a store
// or queue failure) is reported for SQS to deliver again.
func (r *Runner) HandleSQS(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Batch[Message]{
		Handle: func(ctx context.Context, _ events.SQSMessage, m Message) error { return r.Step(ctx, m) },
		Failed: func(_ context.Context, m events.SQSMessage, msg Message, err error) {
			r.Log.Error("provider step failed; the message will be retried",
				"job_id", msg.JobID, "message_id", m.MessageId, "error", err.Error())
		},
		Log: r.Log,
	}.Run(ctx, e)
}

// step is one step's view of its job.
type step struct {
	r      *Runner
	j      *job.Job
	sub    job.Submission
	route  *Route
	client Client
	secret Secret
	lease  string // the chain's hold; empty for a step acting without one
	// failures and answered are the chain's, from its message (Message).
	failures int
	answered string
	log      *slog.Logger
	// request is the job's validated request: an item of its own, off the
	// job's hot item, read by the steps that submit (input), the only ones
	// that need it; the records the transitions return do not carry it.
	request json.RawMessage
}

// Step moves one job on by one short step of the message's kind: submit,
// check (read, or resubmit to Cog), copy the outputs a callback reported,
// time out, or cancel the prediction of a job that ended. It returns an
// error only when the message must come back (the step could not even
// schedule its successor).
func (r *Runner) Step(ctx context.Context, m Message) error {
	j, sub, err := r.Store.ProviderJob(ctx, m.JobID)
	if errors.Is(err, job.ErrNotFound) {
		r.Log.Warn("dropping a message for an unknown job", "job_id", m.JobID)
		return nil
	}
	if err != nil {
		return err
	}
	log := r.Log.With("job_id", j.ID, "workspace_id", j.WorkspaceID, "endpoint", j.Endpoint)
	route, routed := r.Routes.For(j.Endpoint)
	var client Client
	if routed {
		client = r.Clients[route.Endpoint]
	}
	s := &step{r: r, j: j, sub: sub, route: route, client: client, log: log, request: j.Request}
	m = m.Legacy(j)
	switch {
	case m.Kind == StepCancel && j.Status.Terminal():
		return s.cancel(ctx)
	case m.Kind == StepCancel:
		log.Warn("dropping a cancellation of a job that has not ended", "status", string(j.Status))
		return nil
	case j.Status.Terminal():
		log.Info("dropping a step of a job that has ended", "kind", string(m.Kind), "status", string(j.Status))
		return nil
	}
	if j.Status == job.Backlogged {
		return nil // promotion sends it again
	}
	if client == nil || j.Provider != route.Provider {
		_, err := r.Ender.End(ctx, j, job.Change{To: job.Failed, Error: &job.Error{
			Code: job.CodeInternal, Message: "This model is no longer available.",
		}})
		if err != nil && !errors.Is(err, job.ErrConflict) {
			return err
		}
		log.Error("job failed: its endpoint is no longer routed to its provider", "provider", j.Provider)
		return nil
	}
	if s.secret, err = r.secret(ctx, route); err != nil {
		return err
	}
	now := r.Clock.Now()
	switch {
	case m.Lease != "" && m.Lease == j.Lease.ID: // the chain's next step
		s.lease, s.failures, s.answered = m.Lease, m.Failures, m.Answered
	case j.Lease.Held(now):
		if sub.Callback != "" && m.Kind == StepCopy {
			// A callback ended the prediction while a chain sleeps: act on
			// it now rather than at the chain's next step.
			return s.settle(ctx)
		}
		log.Info("dropping a step: another chain holds the job")
		return nil
	case m.Lease != "":
		log.Info("dropping a step of a chain that lost the job")
		return nil
	}
	// Take (or renew) the hold for the step's own duration.
	holder, id := s.lease, s.lease
	if id == "" {
		id = newID()
	}
	held, err := r.Store.Transition(ctx, j, job.Change{To: j.Status, Holder: holder, Lease: &job.Lease{ID: id, Until: now.Add(r.StepFor)}}, now)
	if errors.Is(err, job.ErrConflict) {
		log.Info("dropping a step: the job changed meanwhile")
		return nil
	}
	if err != nil {
		return err
	}
	s.j, s.lease = held, id

	if s.deadline().Sub(now) <= 0 {
		return s.timeout(ctx)
	}
	switch {
	case sub.Callback != "":
		return s.settle(ctx)
	case !sub.Submitted():
		return s.submit(ctx, "")
	case sub.PredictionID == "":
		return s.recover(ctx)
	case client.Readable():
		p, err := client.Read(ctx, route, s.secret, sub.PredictionID)
		if Refused(err) {
			return s.fail(ctx, job.CodeProvider, "The provider no longer knows the prediction: "+err.Error())
		}
		if err != nil {
			return s.retry(ctx, "read the prediction", err)
		}
		return s.apply(ctx, p)
	default:
		return s.resubmit(ctx)
	}
}

func (r *Runner) secret(ctx context.Context, route *Route) (Secret, error) {
	if route.Secret == "" {
		return Secret{}, nil
	}
	s, err := r.Secrets.Get(ctx, route.Secret)
	if err != nil {
		return Secret{}, fmt.Errorf("secret %s: %w", route.Secret, err)
	}
	return s, nil
}

// deadline is when the job times out: its route's deadline after queued.
func (s *step) deadline() time.Time {
	from := s.j.CreatedAt
	if s.j.QueuedAt != nil {
		from = *s.j.QueuedAt
	}
	return from.Add(s.route.Deadline())
}

// submit marks and sends a submission; previous is the marker of the one
// before, whose prediction was not found.
func (s *step) submit(ctx context.Context, previous string) error {
	r := s.r
	token, hash := newToken()
	marker := newID()
	if s.sub.Key == "" {
		s.sub.Key = newKey()
	}
	err := r.Store.MarkSubmission(ctx, s.j.ID, previous, marker, hash, s.sub.Key, r.Clock.Now())
	if errors.Is(err, job.ErrConflict) {
		s.log.Info("another step submits the job")
		return nil
	}
	if err != nil {
		return err
	}
	s.sub.Marker, s.sub.MarkedAt = marker, r.Clock.Now()
	s.sub.Tries++
	input, msg, err := s.input(ctx)
	if err != nil {
		s.answered = marker // nothing was sent
		return s.retry(ctx, "prepare the input", err)
	}
	if msg != "" {
		return s.fail(ctx, job.CodeInvalidInput, msg)
	}
	p, err := s.client.Submit(ctx, s.route, s.secret, Submission{
		JobID: s.j.ID, ID: PredictionID(s.j.ID, s.sub.Key), Input: input, Webhook: s.callbackURL(token),
		StartWithin: s.deadline().Sub(r.Clock.Now()),
	})
	if Refused(err) {
		var pe *Error
		errors.As(err, &pe)
		return s.fail(ctx, job.CodeProvider, Trim("The provider refused the request: "+pe.Message))
	}
	if err != nil {
		if answered(err) {
			s.answered = marker
		}
		return s.retry(ctx, "submit", err)
	}
	if err := r.Store.RecordPrediction(ctx, s.j.ID, marker, p.ID); err != nil {
		return err
	}
	s.sub.PredictionID = p.ID
	s.log.Info("prediction submitted", "prediction_id", p.ID, "status", string(p.Status))
	return s.apply(ctx, p)
}

// recover acts on a submission whose answer was not recorded: find the
// prediction it may have made before making another.
func (s *step) recover(ctx context.Context) error {
	r := s.r
	if wait := r.InFlight - r.Clock.Now().Sub(s.sub.MarkedAt); wait > 0 && s.answered != s.sub.Marker {
		return s.next(ctx, wait) // its answer may yet come
	}
	if !s.client.Readable() {
		// The id is ours: submitting again is idempotent while it runs.
		return s.submit(ctx, s.sub.Marker)
	}
	p, found, err := s.client.Find(ctx, s.route, s.secret, s.j.ID, s.sub.MarkedAt)
	switch {
	case errors.Is(err, ErrUnlisted) && s.answered == s.sub.Marker:
		return s.submit(ctx, s.sub.Marker) // the provider refused it: nothing of it runs
	case errors.Is(err, ErrUnlisted):
		// Never a second request: the one this submission may have made
		// calls back with its id (the callback URL names the job and this
		// submission's token); until then, or the deadline, the job waits.
		s.log.Info("a submission's answer was lost; waiting for its request's callback")
		return s.next(ctx, s.pollDelay())
	case err != nil:
		return s.retry(ctx, "look for a submitted prediction", err)
	}
	if !found {
		return s.submit(ctx, s.sub.Marker)
	}
	if err := r.Store.RecordPrediction(ctx, s.j.ID, s.sub.Marker, p.ID); err != nil {
		if errors.Is(err, job.ErrConflict) {
			return nil // another step recorded one
		}
		return err
	}
	s.sub.PredictionID = p.ID
	s.log.Info("found the prediction of a submission whose answer was lost", "prediction_id", p.ID)
	return s.apply(ctx, p)
}

// resubmit checks a prediction that cannot be read (Cog) by submitting it
// again with the same id: a running one answers its state; one the server
// has forgotten (it ended, its callback lost) runs again.
func (s *step) resubmit(ctx context.Context) error {
	token, hash := newToken()
	if err := s.r.Store.AddCallbackToken(ctx, s.j.ID, hash); err != nil {
		return err
	}
	input, msg, err := s.input(ctx)
	if err != nil {
		return s.retry(ctx, "prepare the input", err)
	}
	if msg != "" {
		return s.fail(ctx, job.CodeInvalidInput, msg)
	}
	p, err := s.client.Submit(ctx, s.route, s.secret, Submission{
		JobID: s.j.ID, ID: s.sub.PredictionID, Input: input, Webhook: s.callbackURL(token),
	})
	if Refused(err) {
		var pe *Error
		errors.As(err, &pe)
		return s.fail(ctx, job.CodeProvider, Trim("The provider refused the request: "+pe.Message))
	}
	if err != nil {
		return s.retry(ctx, "submit again", err)
	}
	return s.apply(ctx, p)
}

// apply moves the job to where the prediction stands.
func (s *step) apply(ctx context.Context, p Prediction) error {
	switch {
	case p.Status == Succeeded && len(p.Paths) > 0:
		return s.fail(ctx, job.CodeProvider, s.pathsMessage(p.Paths[0]))
	case p.Status == Succeeded:
		return s.complete(ctx, p.Outputs)
	case p.Status.Ended():
		msg := p.Error
		if msg == "" {
			msg = "The prediction was " + string(p.Status) + " by the provider."
		}
		return s.fail(ctx, job.CodeProvider, Trim(msg))
	}
	to, progress := job.Scheduled, (*float64)(nil)
	if p.Status == Processing {
		to = job.Processing
		if p.Progress != nil {
			to, progress = job.Sampling, p.Progress
			if *progress >= 1 {
				v := 0.99 // 1 only on completed
				progress = &v
			}
			if s.j.Progress != nil && *s.j.Progress > *progress {
				progress = s.j.Progress
			}
		}
	}
	if !s.j.Status.CanMoveTo(to) {
		to = s.j.Status // never backwards
	}
	if s.lease == "" { // a callback's step: the chain polls on
		return nil
	}
	return s.nextAs(ctx, s.pollDelay(), to, progress)
}

// pathsMessage says that a Cog server reported its output as a path on its
// own disk, and how to fix it: start it with this API's upload store.
func (s *step) pathsMessage(path string) string {
	if r := []rune(path); len(r) > 80 {
		path = string(r[:79]) + "…"
	}
	return Trim(fmt.Sprintf("The Cog server reported its output as a file path on its own disk (%q), which this service cannot read: "+
		"start it with --upload-url %s%s so that it uploads its files here.", path, s.j.BaseURL, UploadsPath))
}

// pollDelay is the wait before the next check: FirstPoll at first, then
// half the submission's age, at most MaxPoll.
func (s *step) pollDelay() time.Duration {
	age := s.r.Clock.Now().Sub(s.sub.MarkedAt)
	return min(max(age/2, s.r.FirstPoll), s.r.MaxPoll)
}

// next schedules the chain's next step after delay, holding the job until
// a while after it is due, so that the sweeper leaves it alone.
func (s *step) next(ctx context.Context, delay time.Duration) error {
	return s.nextAs(ctx, delay, s.j.Status, nil)
}

func (s *step) nextAs(ctx context.Context, delay time.Duration, to job.Status, progress *float64) error {
	return s.schedule(ctx, delay, to, progress, Message{})
}

// schedule is nextAs sending m's Failures and Answered along.
func (s *step) schedule(ctx context.Context, delay time.Duration, to job.Status, progress *float64, m Message) error {
	r := s.r
	now := r.Clock.Now()
	if until := s.deadline(); now.Add(delay).After(until) {
		delay = max(until.Sub(now), 0) // wake for the timeout
	}
	hold := &job.Lease{ID: s.lease, Until: now.Add(delay + r.StepFor)}
	j, err := r.Store.Transition(ctx, s.j, job.Change{To: to, Progress: progress, Holder: s.lease, Lease: hold}, now)
	if errors.Is(err, job.ErrConflict) {
		return nil // cancelled or taken over: the chain ends here
	}
	if err != nil {
		return err
	}
	s.j = j
	m.Kind, m.JobID, m.Lease = StepPoll, s.j.ID, s.lease
	return r.Queue.Schedule(ctx, m, delay)
}

// MaxRetryAfter bounds the wait a provider's Retry-After asks for: one
// delayed message; a provider still busy then says so again.
const MaxRetryAfter = 15 * time.Minute

// retry schedules the step again after a failure of the provider or of
// ours: after Retry-After when the provider gave one (at most
// MaxRetryAfter), else after a backoff that doubles with the chain's
// failures in a row, up to MaxPoll.
func (s *step) retry(ctx context.Context, what string, err error) error {
	r := s.r
	delay := RetryAfter(err, r.Clock.Now())
	if delay == 0 {
		delay = min(r.RetryBase<<min(s.failures, 10), r.MaxPoll)
	}
	s.log.Warn("provider step failed; retrying", "step", what, "retry_in", delay.String(), "failures", s.failures+1, "error", err.Error())
	if s.lease == "" {
		return err // a callback's step: SQS delivers it again
	}
	m := Message{Failures: s.failures + 1}
	if s.answered == s.sub.Marker && s.sub.PredictionID == "" {
		m.Answered = s.answered
	}
	return s.schedule(ctx, delay, s.j.Status, nil, m)
}

// answered reports whether err is the provider's answer (a status code)
// rather than a request that may still be in flight.
func answered(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.StatusCode != 0
}

// fail ends the job as failed with a message the client reads.
func (s *step) fail(ctx context.Context, code, msg string) error {
	_, err := s.r.Ender.End(ctx, s.j, job.Change{To: job.Failed, Error: &job.Error{Code: code, Message: msg}, Holder: s.lease})
	if errors.Is(err, job.ErrConflict) {
		return nil
	}
	if err != nil {
		return err
	}
	s.dropCallback(ctx)
	s.log.Warn("job failed", "code", code, "message", msg)
	return nil
}

// timeout ends a job past its route's deadline; ending it sends the step
// that cancels its prediction.
func (s *step) timeout(ctx context.Context) error {
	mins := int(s.route.Deadline() / time.Minute)
	return s.fail(ctx, job.CodeTimeout, fmt.Sprintf("The job did not finish within %d minutes of being queued.", mins))
}

// settle acts on a stashed callback that ended the prediction.
func (s *step) settle(ctx context.Context) error {
	r := s.r
	body, err := r.Blobs.ReadResult(ctx, s.sub.Callback, MaxCallbackBytes)
	if err == nil {
		var p Prediction
		if p, err = readStash(s.sub.Callback, body, s.client); err == nil {
			if s.sub.PredictionID != "" && p.ID != "" && p.ID != s.sub.PredictionID {
				s.log.Warn("ignoring the callback of another prediction", "prediction_id", p.ID)
				s.dropCallback(ctx)
				return nil
			}
			if s.sub.PredictionID == "" && p.ID != "" && s.sub.Marker != "" {
				// The callback of a submission whose answer was lost.
				if err := r.Store.RecordPrediction(ctx, s.j.ID, s.sub.Marker, p.ID); err != nil && !errors.Is(err, job.ErrConflict) {
					return err
				}
				s.sub.PredictionID = p.ID
			}
			return s.apply(ctx, p)
		}
	}
	s.log.Error("a stashed callback could not be read; the chain goes on without it", "error", err.Error())
	s.dropCallback(ctx)
	if s.lease == "" {
		return nil
	}
	return s.next(ctx, s.pollDelay())
}

func (s *step) dropCallback(ctx context.Context) {
	if s.sub.Callback == "" {
		return
	}
	if err := s.r.Store.DropCallback(ctx, s.j.ID, s.sub.Callback); err != nil {
		s.log.Warn("could not forget a used callback", "error", err.Error())
	}
	_ = s.r.Blobs.DeleteResult(ctx, s.sub.Callback)
}

// complete copies the outputs into the results bucket and completes the job.
func (s *step) complete(ctx context.Context, outputs []string) error {
	r := s.r
	if len(outputs) == 0 {
		return s.fail(ctx, job.CodeProvider, "The provider's prediction succeeded without an output file.")
	}
	keys, copied, err := s.copyOutputs(ctx, outputs)
	var ce *copyError
	switch {
	case errors.As(err, &ce) && ce.permanent:
		return s.fail(ctx, job.CodeProvider, ce.msg)
	case err != nil:
		if s.lease == "" {
			return err
		}
		// Replicate keeps outputs an hour; the deadline comes first or a
		// 404 fails the job.
		return s.retry(ctx, "copy the outputs", err)
	}
	done := 1.0
	_, err = r.Ender.End(ctx, s.j, job.Change{To: job.Completed, Progress: &done, Outputs: keys, Holder: s.lease})
	if errors.Is(err, job.ErrConflict) {
		// The step that ended it may have completed it with the same
		// uploaded files: only this step's own copies go.
		s.log.Info("the job ended while its outputs were copied; this step's copies are deleted")
		s.deleteOutputs(ctx, copied)
		return nil
	}
	if err != nil {
		return err
	}
	s.dropCallback(ctx)
	s.log.Info("job completed", "outputs", len(keys))
	return nil
}

// input maps the job's request to the provider's input: only the route's
// fields, under their mapped names, JSON types kept, then the constants.
// Images are sent as URLs the provider can read without our token. msg is
// the client's error when an input cannot be sent.
func (s *step) input(ctx context.Context) (in map[string]any, msg string, err error) {
	if len(s.request) == 0 {
		if s.request, err = s.r.Store.JobRequest(ctx, s.j.ID); err != nil {
			return nil, "", fmt.Errorf("read the request: %w", err)
		}
	}
	var params map[string]any
	dec := json.NewDecoder(bytes.NewReader(s.request))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		return nil, "", fmt.Errorf("decode the stored request: %w", err)
	}
	ep, ok := s.r.Catalog.ByPath(s.j.Endpoint)
	if !ok {
		return nil, "", fmt.Errorf("no endpoint %s", s.j.Endpoint)
	}
	in = map[string]any{}
	for field, name := range s.route.Input {
		v, ok := params[field]
		if !ok {
			continue
		}
		if ep.ImageField(field) {
			if v, msg, err = s.shareImages(ctx, field, v); err != nil || msg != "" {
				return nil, msg, err
			}
		}
		in[name] = v
	}
	for k, v := range s.route.Constants {
		in[k] = v
	}
	return in, "", nil
}

func (s *step) shareImages(ctx context.Context, field string, v any) (any, string, error) {
	switch x := v.(type) {
	case string:
		return s.shareImage(ctx, field, x)
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			ref, _ := item.(string)
			u, msg, err := s.shareImage(ctx, fmt.Sprintf("%s[%d]", field, i), ref)
			if err != nil || msg != "" {
				return nil, msg, err
			}
			out[i] = u
		}
		return out, "", nil
	}
	return v, "", nil
}

// shareImage turns an asset URL of the job's workspace into a presigned GET;
// data: URIs and other URLs go as they are.
func (s *step) shareImage(ctx context.Context, name, ref string) (string, string, error) {
	id, ok := asset.IDFromURL(s.j.BaseURL, ref)
	if !ok {
		return ref, "", nil
	}
	rec, err := s.r.Assets.Asset(ctx, id)
	if errors.Is(err, asset.ErrNotFound) || err == nil && rec.WorkspaceID != s.j.WorkspaceID {
		return "", name + ": the asset was not found", nil
	}
	if err != nil {
		return "", "", err
	}
	u, err := s.r.Blobs.SharedAssetURL(ctx, rec.Key)
	return u, "", err
}

// callbackURL is where the provider sends the prediction's webhooks: the
// job's API address, the provider, the job and an unguessable token.
func (s *step) callbackURL(token string) string {
	return s.j.BaseURL + "/callbacks/" + s.route.Provider + "/" + s.j.ID + "/" + token
}

// cancel asks the provider to cancel the prediction of a job that ended
// without it (cancelled by the client, or timed out), until it answers.
func (s *step) cancel(ctx context.Context) error {
	r, j, sub := s.r, s.j, s.sub
	if err := s.dropUploads(ctx); err != nil {
		s.log.Warn("the files the Cog server uploaded for the job could not be deleted; retrying", "error", err.Error())
		if r.Clock.Now().Sub(endedAt(j, r.Clock.Now())) <= r.CancelFor {
			return r.Queue.Schedule(ctx, Message{Kind: StepCancel, JobID: j.ID}, r.RetryBase)
		}
	}
	switch {
	case !sub.Submitted() || sub.Cancelled || j.Status == job.Completed,
		j.Error != nil && j.Error.Code == job.CodeProvider:
		return nil
	case s.client == nil:
		s.log.Error("cannot cancel the prediction: the endpoint is no longer routed")
		return nil
	}
	secret, err := r.secret(ctx, s.route)
	if err != nil {
		return err
	}
	now := r.Clock.Now()
	ended := endedAt(j, now)
	again := func(err error) error {
		since := now.Sub(ended)
		if since > r.CancelFor {
			s.log.Error("gave up cancelling the prediction", "error", err.Error())
			return nil
		}
		delay := min(max(since/2, r.RetryBase), r.MaxPoll)
		s.log.Warn("the prediction's cancellation failed; retrying", "retry_in", delay.String(), "error", err.Error())
		return r.Queue.Schedule(ctx, Message{Kind: StepCancel, JobID: j.ID}, delay)
	}
	id := sub.PredictionID
	if id == "" && !s.client.Readable() {
		id = PredictionID(j.ID, sub.Key)
	}
	if id == "" {
		p, found, err := s.client.Find(ctx, s.route, secret, j.ID, sub.MarkedAt)
		if err != nil {
			return again(err)
		}
		if !found {
			if now.Sub(sub.MarkedAt) < 2*r.InFlight {
				return again(errors.New("the submission's prediction is not listed yet"))
			}
			return nil // the submission made none
		}
		id = p.ID
	}
	if err := s.client.Cancel(ctx, s.route, secret, id); err != nil {
		return again(err)
	}
	if err := r.Store.MarkProviderCancelled(ctx, j.ID); err != nil {
		return err
	}
	s.log.Info("prediction cancelled", "prediction_id", id, "status", string(j.Status))
	return nil
}

// endedAt is when j ended; now for a record without its end.
func endedAt(j *job.Job, now time.Time) time.Time {
	if j.CompletedAt != nil {
		return *j.CompletedAt
	}
	return now
}

// dropUploads deletes the files a Cog server put in the upload store for
// a job that ended without completing (failed, cancelled, timed out):
// they go with the job's end rather than stay until the results bucket's
// lifecycle rule. The upload store takes no file for a job that has ended.
func (s *step) dropUploads(ctx context.Context) error {
	if s.j.Provider != Cog || s.j.Status == job.Completed || !s.j.Status.Terminal() {
		return nil
	}
	n, err := s.r.Blobs.DeleteResults(ctx, uploadKey(s.j.ID, ""))
	if n > 0 {
		s.log.Info("deleted the files the Cog server uploaded for the job", "files", n, "status", string(s.j.Status))
	}
	return err
}

// PredictionID is the id a job's prediction gets where the client chooses
// it (Cog), the same on every resubmission. With the job's submission key (job.Submission.Key) it is unguessable:
// the job's id without its dashes, then the key; 64 hexadecimal digits.
func PredictionID(jobID, key string) string { return strings.ReplaceAll(jobID, "-", "") + key }

// JobOfPrediction reads the job id and the key back from a prediction id
// of PredictionID; ok false for anything else.
func JobOfPrediction(id string) (jobID, key string, ok bool) {
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", "", false
	}
	h := id[:32]
	jobID = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	return jobID, id[32:], job.ValidID(jobID)
}

// newKey is a submission key: 128 random bits in hexadecimal.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TokenHash is how a callback token is stored.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func newToken() (token, hash string) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, TokenHash(token)
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
