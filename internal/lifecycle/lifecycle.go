// Package lifecycle ends jobs and starts the ones waiting behind them. The
// worker, client cancellation and the sweeper all end jobs through it, so a
// freed running slot always goes to the workspace's oldest backlogged job
// (docs/architecture.md, "Promotion"), with no polling. It imports no AWS package.
package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"genjobs/internal/clock"
	"genjobs/internal/job"
	"genjobs/internal/metrics"
)

// Store is the job storage lifecycle needs (store.Store).
type Store interface {
	Transition(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error)
	Backlog(ctx context.Context, ws string, limit int) ([]*job.Job, error)
}

// Queue hands a job to the queue that runs it (queue.JobSender).
type Queue interface {
	Enqueue(ctx context.Context, j *job.Job) error
	// CancelPrediction asks the provider queue to cancel the prediction of
	// a routed job that ended without it.
	CancelPrediction(ctx context.Context, j *job.Job) error
}

// Ender ends jobs and promotes the backlog into the slots they free.
type Ender struct {
	Store Store
	Queue Queue
	Clock clock.Clock
	Log   *slog.Logger
	// Metrics counts the ends, by model; nil: none.
	Metrics *metrics.Emitter
}

// End moves j to the terminal status of c and, when j held a running slot,
// promotes the workspace's backlog into the freed slot. A failed promotion
// is only logged: the job has ended, and the sweeper promotes what was missed.
func (l *Ender) End(ctx context.Context, j *job.Job, c job.Change) (*job.Job, error) {
	ended, err := l.Store.Transition(ctx, j, c, l.Clock.Now())
	if err != nil {
		return ended, err
	}
	l.countEnd(ended)
	if ended.Provider != "" && ended.Status != job.Completed {
		// The provider is told: a step of the provider queue cancels the
		// job's prediction, if one was made (it knows when none need be).
		if err := l.Queue.CancelPrediction(ctx, ended); err != nil {
			l.Log.Error("could not hand the cancellation of the job's prediction on; the prediction runs until it ends",
				"job_id", j.ID, "error", err.Error())
		}
	}
	if _, err := l.Promote(ctx, j.WorkspaceID); err != nil {
		l.Log.Error("promotion after a job ended failed; the sweeper will retry",
			"job_id", j.ID, "workspace_id", j.WorkspaceID, "error", err.Error())
	}
	return ended, nil
}

// countEnd records a job's end in the metrics, by its model (and error code).
func (l *Ender) countEnd(j *job.Job) {
	switch j.Status {
	case job.Completed:
		l.Metrics.Count(metrics.JobsCompleted, j.Model(), 1)
	case job.Cancelled:
		l.Metrics.Count(metrics.JobsCancelled, j.Model(), 1)
	case job.Failed:
		code := job.CodeInternal
		if j.Error != nil {
			code = j.Error.Code
		}
		l.Metrics.Count(metrics.JobsFailed, j.Model(), 1, metrics.Code(code))
	}
}

// Cancel ends a job at the client's request. A job that has already ended
// gives job.ErrConflict with the job as it stands.
func (l *Ender) Cancel(ctx context.Context, j *job.Job) (*job.Job, error) {
	return l.End(ctx, j, job.Change{To: job.Cancelled})
}

// promoteBatch bounds the backlog read at once; promotion stops at the first
// job that finds no free slot anyway.
const promoteBatch = 10

// Promote moves the workspace's oldest backlogged jobs to queued while
// running slots are free, and enqueues each. It returns how many it promoted.
func (l *Ender) Promote(ctx context.Context, ws string) (int, error) {
	backlog, err := l.Store.Backlog(ctx, ws, promoteBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range backlog {
		promoted, err := l.Store.Transition(ctx, b, job.Change{To: job.Queued}, l.Clock.Now())
		switch {
		case errors.Is(err, job.ErrNoRunningSlot):
			return n, nil
		case errors.Is(err, job.ErrConflict) || errors.Is(err, job.ErrNotFound):
			continue // cancelled or promoted meanwhile: the index lags behind
		case err != nil:
			return n, err
		}
		n++
		if err := l.Queue.Enqueue(ctx, promoted); err != nil {
			// Queued and durable: the sweeper enqueues queued jobs that lack a message.
			l.Log.Error("enqueue of a promoted job failed; left for the sweeper",
				"job_id", promoted.ID, "workspace_id", ws, "error", err.Error())
		}
	}
	return n, nil
}
