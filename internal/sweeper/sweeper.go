// Package sweeper is the rescuer: once a minute it makes sure no job stays
// stuck. It re-sends the message of a job that may have lost its own (queued
// and untaken, or running with a lapsed lease), fails jobs 30 minutes past queued with timeout, fails the jobs whose
// messages the dead-letter queue took, promotes backlogged jobs a
// promotion missed, re-sends the message of an overdue webhook attempt, and
// expires the top-ups by checkout left pending past their session's life.
// Every change of a job goes through the store's one transition.
package sweeper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/billing"
	"genjobs/internal/clock"
	"genjobs/internal/job"
	"genjobs/internal/webhook"
)

// Store reads jobs (store.Store).
type Store interface {
	Job(ctx context.Context, id string) (*job.Job, error)
	EachUnfinished(ctx context.Context, st job.Status, fn func(*job.Job) error) error
	MarkEnqueued(ctx context.Context, j *job.Job, at time.Time) error
}

// Lifecycle ends and promotes jobs (lifecycle.Ender).
type Lifecycle interface {
	End(ctx context.Context, j *job.Job, c job.Change) (*job.Job, error)
	Promote(ctx context.Context, ws string) (int, error)
}

// Lease keeps two sweeps from overlapping (store.Store).
type Lease interface {
	TakeLease(ctx context.Context, name, holder string, until, now time.Time) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string, now time.Time) error
}

// Queue re-sends a job's message.
type Queue interface {
	Enqueue(ctx context.Context, j *job.Job) error
}

// Deliveries finds and reads webhook deliveries (store.Store).
type Deliveries interface {
	// EachOverdueDelivery calls fn with the job of every pending delivery
	// due before before, from an index that may lag.
	EachOverdueDelivery(ctx context.Context, before time.Time, fn func(jobID string) error) error
	Delivery(ctx context.Context, jobID string) (*webhook.Delivery, error)
}

// DeliveryQueue re-sends a delivery's message (queue.Deliveries).
type DeliveryQueue interface {
	Schedule(ctx context.Context, jobID string, attempt int, delay time.Duration) error
}

// TopUps finds and expires top-ups by checkout left pending (topupsdb.DB).
type TopUps interface {
	// EachStalePendingCheckout calls fn with every top-up pending since
	// before created, from an index that may lag.
	EachStalePendingCheckout(ctx context.Context, created time.Time, fn func(ws, id string) error) error
	// EndCheckout ends a pending top-up; changed is false when it was not
	// pending any more.
	EndCheckout(ctx context.Context, ws, id string, status billing.CheckoutStatus, at time.Time) (changed bool, err error)
}

// DeadLetters reads the jobs DLQ (queue.DeadLetters).
type DeadLetters interface {
	Drain(ctx context.Context, max int, fn func(jobID string) error) (int, error)
}

// Plans tops up the plans' compute units (accountsdb.DB).
type Plans interface {
	AllowancesDone(ctx context.Context, month string) (bool, error)
	EachPlan(ctx context.Context, fn func(ws string) error) error
	TopUpPlan(ctx context.Context, ws string, now time.Time) (billing.Units, error)
	MarkAllowancesDone(ctx context.Context, month string, at time.Time) error
}

// Sweeper finds stuck jobs.
type Sweeper struct {
	Store     Store
	Lifecycle Lifecycle
	Queue     Queue
	Dead      DeadLetters
	Clock     clock.Clock
	Log       *slog.Logger
	// Deadline is how long a job may take from queued to its end (docs/api.md, "Limits").
	Deadline time.Duration
	// RequeueAfter is how long a queued job waits for a worker before its
	// message is sent again (its first may have been lost), and how long a
	// webhook attempt may be overdue before its message is.
	RequeueAfter time.Duration
	// Deliveries and DeliveryQueue, when set, re-send the message of every
	// webhook delivery whose attempt is overdue and unclaimed: nothing
	// else would ever make it once its message is lost.
	Deliveries    Deliveries
	DeliveryQueue DeliveryQueue
	// Lease, when set, is taken for LeaseFor by each run; a run that finds
	// it held does nothing (a slow sweep, an EventBridge duplicate).
	Lease    Lease
	LeaseFor time.Duration
	// Plans, when set, is topped up on the first sweep of each UTC month:
	// every workspace with a plan gets its monthly compute units back, once
	// (docs/operations.md, "Plans and compute units").
	Plans Plans
	// TopUps, when set, marks expired every top-up by checkout still
	// pending after billing.CheckoutLife: its session can no longer be
	// paid, and its webhook was lost (or its session never made).
	TopUps TopUps
}

// Defaults for Deadline and RequeueAfter.
const (
	DefaultDeadline     = 30 * time.Minute
	DefaultRequeueAfter = 2 * time.Minute
	// maxDeadPerSweep bounds the DLQ work of one run; the next takes the rest.
	maxDeadPerSweep = 100
)

// leaseName names the sweeper's lease item.
const leaseName = "sweeper"

// DefaultLeaseFor outlasts the sweeper function's 60 s timeout.
const DefaultLeaseFor = 70 * time.Second

func newHolder() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Report is what one sweep did; it is logged as one line.
type Report struct {
	Scanned      int `json:"scanned"`
	Requeued     int `json:"requeued"`
	TimedOut     int `json:"timed_out"`
	DeadLettered int `json:"dead_lettered"`
	Promoted     int `json:"promoted"`
	WebhooksSent int `json:"webhooks_resent"`
	// ToppedUp counts the plans this sweep topped up (the first sweep of a
	// month).
	ToppedUp int `json:"plans_topped_up"`
	// TopUpsExpired counts the top-ups by checkout this sweep expired.
	TopUpsExpired int `json:"topups_expired"`
}

// Handle runs one sweep for the schedule. It fails (so the run is retried
// and visible) only when a sweep could not finish.
func (s *Sweeper) Handle(ctx context.Context, _ events.EventBridgeEvent) error {
	if s.Lease != nil {
		holder := newHolder()
		ok, err := s.Lease.TakeLease(ctx, leaseName, holder, s.Clock.Now().Add(s.LeaseFor), s.Clock.Now())
		if err != nil {
			return err
		}
		if !ok {
			s.Log.Info("sweep skipped: another sweep is running")
			return nil
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := s.Lease.ReleaseLease(rctx, leaseName, holder, s.Clock.Now()); err != nil {
				s.Log.Warn("could not release the sweep's lease; the next sweep waits for it to lapse", "error", err.Error())
			}
		}()
	}
	_, err := s.Sweep(ctx)
	return err
}

// Sweep runs once over every unfinished job.
func (s *Sweeper) Sweep(ctx context.Context) (Report, error) {
	start := time.Now()
	var r Report
	err := s.sweep(ctx, &r)
	attrs := []any{"scanned", r.Scanned, "requeued", r.Requeued, "timed_out", r.TimedOut,
		"dead_lettered", r.DeadLettered, "promoted", r.Promoted, "webhooks_resent", r.WebhooksSent, "plans_topped_up", r.ToppedUp, "topups_expired", r.TopUpsExpired, "duration_ms", time.Since(start).Milliseconds()}
	if err != nil {
		s.Log.Error("sweep", append(attrs, "error", err.Error())...)
		return r, err
	}
	s.Log.Info("sweep", attrs...)
	return r, nil
}

// sweep goes on past a job, a status or a workspace it could not handle:
// one that fails (a throttled item, a DLQ that does not answer) must not
// hold back the others. It stops when its context ends, and reports the
// first failure and how many there were.
func (s *Sweeper) sweep(ctx context.Context, r *Report) error {
	var failed []error
	// stopOn records a failure, if any, and says whether the sweep must
	// stop: only when its context has ended, since one failure must not
	// hold back the rest.
	stopOn := func(err error) bool {
		if err != nil {
			failed = append(failed, err)
		}
		return ctx.Err() != nil
	}
	if s.Dead != nil {
		// A message whose job could not be failed stays on the DLQ.
		_, err := s.Dead.Drain(ctx, maxDeadPerSweep, func(id string) error {
			return s.failDead(ctx, id, r)
		})
		if stopOn(err) {
			return outcome(failed, ctx.Err())
		}
	}
	for _, st := range job.Statuses {
		if !st.Running() {
			continue
		}
		err := s.Store.EachUnfinished(ctx, st, func(ref *job.Job) error {
			r.Scanned++
			if stopOn(s.check(ctx, ref, r)) {
				return ctx.Err()
			}
			return nil
		})
		if stopOn(err) {
			return outcome(failed, ctx.Err())
		}
	}
	waiting := map[string]bool{}
	err := s.Store.EachUnfinished(ctx, job.Backlogged, func(ref *job.Job) error {
		r.Scanned++
		waiting[ref.WorkspaceID] = true
		return nil
	})
	if stopOn(err) {
		return outcome(failed, ctx.Err())
	}
	for ws := range waiting {
		n, err := s.Lifecycle.Promote(ctx, ws)
		r.Promoted += n
		if err != nil {
			err = fmt.Errorf("promote the backlog of %s: %w", ws, err)
		}
		if stopOn(err) {
			return outcome(failed, ctx.Err())
		}
	}
	if s.Deliveries != nil && s.DeliveryQueue != nil {
		now := s.Clock.Now()
		err := s.Deliveries.EachOverdueDelivery(ctx, now.Add(-s.RequeueAfter), func(id string) error {
			if stopOn(s.resendDelivery(ctx, id, now, r)) {
				return ctx.Err()
			}
			return nil
		})
		if stopOn(err) {
			return outcome(failed, ctx.Err())
		}
	}
	if s.Plans != nil {
		if stopOn(s.topUpPlans(ctx, r)) {
			return outcome(failed, ctx.Err())
		}
	}
	if s.TopUps != nil {
		now := s.Clock.Now()
		err := s.TopUps.EachStalePendingCheckout(ctx, now.Add(-billing.CheckoutLife), func(ws, id string) error {
			changed, err := s.TopUps.EndCheckout(ctx, ws, id, billing.CheckoutExpired, now)
			if err != nil {
				err = fmt.Errorf("expire top-up %s of %s: %w", id, ws, err)
			} else if changed {
				r.TopUpsExpired++
				s.Log.Warn("top-up expired: still pending after its checkout's life", "workspace_id", ws, "topup_id", id)
			}
			if stopOn(err) {
				return ctx.Err()
			}
			return nil
		})
		if stopOn(err) {
			return outcome(failed, ctx.Err())
		}
	}
	return outcome(failed, nil)
}

// topUpPlans gives every plan its monthly compute units on the month's
// first sweep. Each top-up is a conditional write keyed on the month, so
// a sweep retried, or two at once, credit a workspace once; the month is
// marked done only when every plan's top-up went through, so a failed one
// is tried again by the next sweep.
func (s *Sweeper) topUpPlans(ctx context.Context, r *Report) error {
	now := s.Clock.Now()
	month := billing.Month(now)
	done, err := s.Plans.AllowancesDone(ctx, month)
	if err != nil || done {
		return err
	}
	var failed []error
	err = s.Plans.EachPlan(ctx, func(ws string) error {
		n, err := s.Plans.TopUpPlan(ctx, ws, now)
		if err != nil {
			failed = append(failed, fmt.Errorf("top up the plan of %s: %w", ws, err))
			return ctx.Err()
		}
		if n > 0 {
			r.ToppedUp++
			s.Log.Info("plan topped up", "workspace_id", ws, "month", month, "units", int64(n))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return outcome(failed, nil)
	}
	return s.Plans.MarkAllowancesDone(ctx, month, now)
}

// resendDelivery sends again the message of a webhook delivery whose
// attempt is RequeueAfter overdue and not being made: its message was
// lost (or its claim's answer, before claims carried their message's id).
// A message that was not lost makes a duplicate, which the deliverer drops.
func (s *Sweeper) resendDelivery(ctx context.Context, jobID string, now time.Time, r *Report) error {
	d, err := s.Deliveries.Delivery(ctx, jobID)
	if errors.Is(err, webhook.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if d.State != webhook.Pending || now.Sub(d.NextAt) < s.RequeueAfter || now.Before(d.ClaimUntil) {
		return nil // the index lagged, or an attempt is under way
	}
	if err := s.DeliveryQueue.Schedule(ctx, d.JobID, d.Due(), 0); err != nil {
		return fmt.Errorf("re-send the webhook of job %s: %w", d.JobID, err)
	}
	r.WebhooksSent++
	s.Log.Warn("webhook attempt overdue; its message sent again", "job_id", d.JobID, "webhook_id", d.ID,
		"attempt", d.Due(), "due_at", d.NextAt)
	return nil
}

// outcome is a sweep's result: nil when it went through, else its first
// failure and their count; stopped is why it stopped early, if it did.
func outcome(failed []error, stopped error) error {
	if len(failed) == 0 {
		return stopped
	}
	if len(failed) == 1 {
		return failed[0]
	}
	return fmt.Errorf("%d failures, the first: %w", len(failed), failed[0])
}

// check looks at one running job from the status index (which holds only
// its id, workspace, status and times) and reads it whole only when it may
// need something.
func (s *Sweeper) check(ctx context.Context, ref *job.Job, r *Report) error {
	now := s.Clock.Now()
	// queued_at is never before creation: a job created less than a
	// deadline ago cannot be late, and one updated a moment ago (a running
	// job's heartbeat writes twice a second) needs nothing.
	late := now.Sub(ref.CreatedAt) >= s.Deadline
	idle := now.Sub(ref.UpdatedAt) >= s.RequeueAfter
	if !late && !idle {
		return nil
	}
	j, err := s.Store.Job(ctx, ref.ID)
	if errors.Is(err, job.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if j.Status.Terminal() {
		return nil
	}
	deadline := s.Deadline
	if j.Deadline > 0 { // a routed job's own (its route's deadline_minutes)
		deadline = j.Deadline
	}
	if j.QueuedAt != nil && now.Sub(*j.QueuedAt) >= deadline {
		_, err := s.Lifecycle.End(ctx, j, job.Change{To: job.Failed, Error: &job.Error{
			Code: job.CodeTimeout, Message: fmt.Sprintf("The job did not finish within %s of being queued.", formatDuration(deadline)),
		}})
		if errors.Is(err, job.ErrConflict) {
			return nil // it ended meanwhile
		}
		if err != nil {
			return err
		}
		r.TimedOut++
		s.Log.Warn("job timed out", "job_id", j.ID, "workspace_id", j.WorkspaceID, "status", string(j.Status))
		return nil
	}
	// A queued job no worker took, or a running one whose worker died (its
	// lease lapsed, no heartbeat): send its message again. In AWS the lost
	// attempt's own message would come back after the visibility timeout;
	// locally fauxqs loses its messages on a restart. A duplicate is
	// harmless: the worker drops a message for a job someone holds.
	if j.Lease.Held(now) {
		return nil
	}
	last := j.UpdatedAt
	if j.Lease.Until.After(last) {
		last = j.Lease.Until
	}
	if j.EnqueuedAt != nil && j.EnqueuedAt.After(last) {
		last = *j.EnqueuedAt
	}
	if now.Sub(last) < s.RequeueAfter {
		return nil
	}
	if err := s.Queue.Enqueue(ctx, j); err != nil {
		return err
	}
	r.Requeued++
	return s.Store.MarkEnqueued(ctx, j, now)
}

// failDead fails the job of a message the DLQ took: every attempt crashed
// or ran out of time. A job no attempt ever claimed is sent again instead.
func (s *Sweeper) failDead(ctx context.Context, id string, r *Report) error {
	j, err := s.Store.Job(ctx, id)
	if errors.Is(err, job.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if j.Status.Terminal() || j.Status == job.Backlogged {
		return nil
	}
	if j.Lease.Held(s.Clock.Now()) {
		// A stale duplicate reached the DLQ while a healthy attempt works
		// on the job: that one ends it, and if it dies the job is sent
		// again once its lease lapses (check).
		s.Log.Info("dead-lettered message of a job whose lease is held; left to its worker", "job_id", j.ID)
		return nil
	}
	if j.Status == job.Queued && j.Attempts == 0 {
		// No worker ever claimed it: its receives were throttled
		// invocations (they count toward maxReceiveCount), not failures.
		// Throttling must not fail a job: send it again; the deadline
		// still bounds it.
		if err := s.Queue.Enqueue(ctx, j); err != nil {
			return err
		}
		r.Requeued++
		s.Log.Warn("job re-sent: its message reached the dead-letter queue before any worker claimed it",
			"job_id", j.ID, "workspace_id", j.WorkspaceID)
		return s.Store.MarkEnqueued(ctx, j, s.Clock.Now())
	}
	_, err = s.Lifecycle.End(ctx, j, job.Change{To: job.Failed, Error: &job.Error{
		Code: job.CodeInternal, Message: "The job could not be run; every attempt failed.",
	}})
	if errors.Is(err, job.ErrConflict) {
		return nil
	}
	if err != nil {
		return err
	}
	r.DeadLettered++
	s.Log.Warn("job failed: its message reached the dead-letter queue", "job_id", j.ID, "workspace_id", j.WorkspaceID)
	return nil
}

// formatDuration writes whole minutes as "30 minutes".
func formatDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		if d == time.Minute {
			return "1 minute"
		}
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	}
	return d.String()
}
