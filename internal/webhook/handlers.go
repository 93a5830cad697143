package webhook

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/clock"
	"genjobs/internal/job"
	"genjobs/internal/metrics"
	"genjobs/internal/sqsbatch"
)

// Store keeps deliveries and reads jobs (store.Store).
type Store interface {
	// CreateDelivery stores d unless the job has a delivery already, and
	// returns the stored one: a replayed stream record finds the first.
	CreateDelivery(ctx context.Context, d *Delivery) (*Delivery, error)
	Delivery(ctx context.Context, jobID string) (*Delivery, error)
	// ClaimAttempt takes attempt n of a pending delivery under claim (a
	// token of the caller's) until the given time; ErrClaimed when it is
	// taken or no longer due. A retried write that meets its own claim
	// succeeds.
	ClaimAttempt(ctx context.Context, jobID string, n int, claim string, until, now time.Time) error
	// RecordAttempt appends attempt a (the one claimed under claim) and
	// moves the delivery to state, due again at next when pending. A
	// retried write that finds a recorded under claim succeeds.
	RecordAttempt(ctx context.Context, jobID string, claim string, a Attempt, state State, next time.Time) error
	Job(ctx context.Context, id string) (*job.Job, error)
}

// Errors of delivery storage.
var (
	ErrNotFound = errors.New("webhook: no delivery for this job")
	ErrClaimed  = errors.New("webhook: attempt taken by another invocation")
	// ErrDelivered refuses to send again a delivery that succeeded.
	ErrDelivered = errors.New("webhook: the delivery succeeded")
)

// Queue carries the waits between attempts (queue.Deliveries): a message
// for attempt n of a job, visible after delay (SQS caps one wait at 15
// minutes; a message that arrives early is sent on again).
type Queue interface {
	Schedule(ctx context.Context, jobID string, attempt int, delay time.Duration) error
	// Park puts a failed delivery on the dead-letter queue for operators.
	Park(ctx context.Context, d *Delivery) error
}

// Message is a deliveries-queue message.
type Message struct {
	JobID   string `json:"job_id"`
	Attempt int    `json:"attempt"`
}

// Valid reports whether m names a job and an attempt.
func (m Message) Valid() bool { return job.ValidID(m.JobID) && m.Attempt >= 1 }

// Notifier starts a delivery when a job with a webhook ends: the handler of
// the table's stream, filtered by the template to such changes.
type Notifier struct {
	Store Store
	Queue Queue
	Clock clock.Clock
	Log   *slog.Logger
}

// HandleStream starts the delivery of each record's job, in order; at the
// first failure it reports that record, so the stream retries from there.
func (n *Notifier) HandleStream(ctx context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	for _, r := range e.Records {
		if err := n.start(ctx, r); err != nil {
			n.Log.Error("webhook not started; the stream will retry", "sequence_number", r.Change.SequenceNumber, "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
			return resp, nil
		}
	}
	return resp, nil
}

func (n *Notifier) start(ctx context.Context, r events.DynamoDBEventRecord) error {
	img := r.Change.NewImage
	text := func(name string) string {
		if v, ok := img[name]; ok && v.DataType() == events.DataTypeString {
			return v.String()
		}
		return ""
	}
	st, _ := job.ParseStatus(text("status"))
	// The template's filter sends only these; a change of its pattern must
	// not start deliveries it did not mean.
	if text("SK") != "JOB" || !st.Terminal() || text("webhook_url") == "" {
		return nil
	}
	if old, ok := r.Change.OldImage["status"]; ok && old.DataType() == events.DataTypeString {
		if was, _ := job.ParseStatus(old.String()); was.Terminal() {
			return nil
		}
	}
	now := n.Clock.Now()
	d, err := n.Store.CreateDelivery(ctx, &Delivery{
		JobID: text("job_id"), WorkspaceID: text("workspace_id"), ID: NewID(), URL: text("webhook_url"),
		State: Pending, NextAt: now, CreatedAt: now,
	})
	if err != nil {
		return err
	}
	if d.State != Pending {
		return nil
	}
	// A replay sends the message again; the deliverer drops duplicates.
	if err := n.Queue.Schedule(ctx, d.JobID, d.Due(), d.NextAt.Sub(now)); err != nil {
		return err
	}
	n.Log.Info("webhook started", "job_id", d.JobID, "webhook_id", d.ID, "status", string(st))
	return nil
}

// Deliverer makes the attempts: the handler of the deliveries queue.
type Deliverer struct {
	Store  Store
	Queue  Queue
	Sender *Sender
	// Render is the job's record as GET /jobs/{id} answers it, result URLs
	// minted now: the body of every attempt.
	Render   func(ctx context.Context, j *job.Job) ([]byte, error)
	Schedule []time.Duration // Schedule, or a compressed one
	ClaimFor time.Duration   // longer than an attempt, shorter than the queue's visibility timeout
	Clock    clock.Clock
	Log      *slog.Logger
	Metrics  *metrics.Emitter // attempts by outcome and their latency; nil: none
}

// DefaultClaimFor covers one attempt (10 s) and the writes around it.
const DefaultClaimFor = 45 * time.Second

// HandleSQS handles the batch's messages in parallel, reporting those whose
// work was not recorded.
func (d *Deliverer) HandleSQS(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Batch[Message]{
		Handle: func(ctx context.Context, m events.SQSMessage, msg Message) error {
			return d.Attempt(ctx, msg, m.MessageId)
		},
		Failed: func(_ context.Context, m events.SQSMessage, _ Message, err error) {
			d.Log.Error("webhook attempt not recorded; the message will be retried", "message_id", m.MessageId, "error", err.Error())
		},
		Parallel: true,
		Log:      d.Log,
	}.Run(ctx, e)
}

// outcome names an attempt's result for the metrics: delivered, gone (410:
// the receiver asked for no more) or failed.
func outcome(s State, status int) string {
	switch {
	case s == Succeeded:
		return "delivered"
	case status == 410:
		return "gone"
	}
	return "failed"
}

// Attempt makes the attempt msg names when it is due, and schedules what
// follows. A stale message (the attempt was made, the delivery ended) is
// dropped; an early one is sent on until its time. claim is the message's
// id: a claim or record whose answer was lost knows its own write by it.
func (d *Deliverer) Attempt(ctx context.Context, msg Message, claim string) error {
	del, err := d.Store.Delivery(ctx, msg.JobID)
	if errors.Is(err, ErrNotFound) {
		d.Log.Error("dropping a message of a job without a delivery", "job_id", msg.JobID)
		return nil
	}
	if err != nil {
		return err
	}
	now := d.Clock.Now()
	// The message of the attempt just recorded comes back only when what
	// followed the record failed: do that again.
	if msg.Attempt == len(del.Attempts) {
		switch del.State {
		case Pending:
			return d.Queue.Schedule(ctx, del.JobID, del.Due(), del.NextAt.Sub(now))
		case Failed:
			return d.Queue.Park(ctx, del)
		}
	}
	if del.State != Pending || msg.Attempt != del.Due() {
		return nil // stale or duplicate
	}
	if wait := del.NextAt.Sub(now); wait > 0 {
		return d.Queue.Schedule(ctx, del.JobID, msg.Attempt, wait)
	}
	n := msg.Attempt
	err = d.Store.ClaimAttempt(ctx, del.JobID, n, claim, now.Add(d.ClaimFor), now)
	if errors.Is(err, ErrClaimed) {
		// A duplicate: the holder's own message comes back if it fails.
		return nil
	}
	if err != nil {
		return err
	}
	j, err := d.Store.Job(ctx, del.JobID)
	if err != nil {
		return err
	}
	body, err := d.Render(ctx, j)
	if err != nil {
		return err
	}
	sent := d.Clock.Now()
	r, err := d.Sender.Send(ctx, del, j.BaseURL, body, now)
	if err != nil {
		return err
	}
	at := d.Clock.Now()
	state, next := Next(n, r, at, d.Schedule)
	d.Metrics.Duration(metrics.WebhookLatency, "", at.Sub(sent))
	d.Metrics.Count(metrics.WebhookAttempts, "", 1, metrics.Outcome(outcome(state, r.StatusCode)))
	a := Attempt{Number: n, At: sent, EndedAt: at, StatusCode: r.StatusCode, Error: r.Err}
	if state == Pending {
		a.NextAt = &next
	}
	if err := d.Store.RecordAttempt(ctx, del.JobID, claim, a, state, next); err != nil {
		return err
	}
	log := d.Log.With("job_id", del.JobID, "webhook_id", del.ID, "attempt", n, "status_code", r.StatusCode)
	switch state {
	case Succeeded:
		log.Info("webhook delivered")
	case Failed:
		log.Warn("webhook failed; parked", "error", r.Err)
		del.State, del.Attempts = Failed, append(del.Attempts, a)
		return d.Queue.Park(ctx, del)
	default:
		log.Info("webhook attempt failed; retry scheduled", "error", r.Err, "next_attempt_at", next)
		return d.Queue.Schedule(ctx, del.JobID, n+1, next.Sub(at))
	}
	return nil
}
