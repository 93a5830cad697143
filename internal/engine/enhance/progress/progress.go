// Package progress is an engine job's stop signal and progress, shared by
// the goroutines that work on it: progress reported as units of work done,
// rising monotonically, and every goroutine stopped at the first error,
// cancellation or refused report.
package progress

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"genjobs/internal/engine"
)

// Ceiling is where compute stops: the worker sets 1 at completion,
// so an engine never does.
const Ceiling = 0.99

// Progress turns units of work done into monotonically rising reports. Its
// mutex also keeps report calls from several goroutines apart: a Report
// need not be safe for concurrent use.
type Progress struct {
	report  engine.Report
	mu      sync.Mutex
	Total   float64 // every unit the job will do
	done    float64
	last    float64 // the last value reported
	err     error   // the first error: report's, ctx's or a worker's
	stopped atomic.Bool
}

// New is the progress of a job of total units (at least 1).
func New(report engine.Report, total float64) *Progress {
	return &Progress{report: report, Total: math.Max(total, 1)}
}

// Add records units done and reports the new fraction.
func (p *Progress) Add(units float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += units
	return p.sendLocked(p.done)
}

// Estimate reports done+partial without recording partial: the share of a
// phase that cannot count its own work (a decoder, an encoder).
func (p *Progress) Estimate(partial float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sendLocked(p.done + partial)
}

func (p *Progress) sendLocked(units float64) error {
	if p.err != nil {
		return p.err
	}
	v := math.Min(units/p.Total*Ceiling, Ceiling)
	if v <= p.last {
		return nil
	}
	p.last = v
	if err := p.report(engine.Update{Progress: v}); err != nil {
		p.failLocked(err)
	}
	return p.err
}

// Failure is the recorded error, if any.
func (p *Progress) Failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Fail records err as the job's error unless one is already recorded.
func (p *Progress) Fail(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLocked(err)
	return p.err
}

func (p *Progress) failLocked(err error) {
	if p.err == nil {
		p.err = err
		p.stopped.Store(true)
	}
}

// Runner is a job's stop signal and progress, shared by the goroutines
// that work on it: all stop at the first error, cancellation or refused
// report.
type Runner struct {
	Ctx     context.Context
	Prog    *Progress
	Workers int
}

// NewRunner is a runner with a worker a core.
func NewRunner(ctx context.Context, prog *Progress) *Runner {
	return &Runner{Ctx: ctx, Prog: prog, Workers: runtime.GOMAXPROCS(0)}
}

// Check reports whether work may go on, recording ctx's error if it ended.
func (r *Runner) Check() error {
	if r.Prog.stopped.Load() {
		return r.Prog.Failure()
	}
	if err := r.Ctx.Err(); err != nil {
		return r.Prog.Fail(err)
	}
	return nil
}

// Tick is how often a phase that cannot count its work reports an estimate.
const Tick = 100 * time.Millisecond

// Unmetered runs fn, which cannot report its own progress, in a goroutine and
// reports an estimate meanwhile: units grow towards the phase's share as
// time passes, with expected the time fn is expected to take. It returns at
// once when ctx ends or a report is refused; abort is then closed so fn can
// give up early (fn's goroutine is left to finish on its own).
func (r *Runner) Unmetered(units float64, expected time.Duration, fn func(abort <-chan struct{}) error) error {
	if err := r.Check(); err != nil {
		return err
	}
	abort := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := engine.Guard(func() (struct{}, error) { return struct{}{}, fn(abort) })
		done <- err
	}()
	start := time.Now()
	ticker := time.NewTicker(Tick)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return r.Prog.Fail(err)
			}
			return r.Prog.Add(units)
		case <-r.Ctx.Done():
			close(abort)
			return r.Prog.Fail(r.Ctx.Err())
		case <-ticker.C:
			// 1-e^-t/T rises for ever and never reaches the phase's share.
			share := 1 - math.Exp(-float64(time.Since(start))/float64(max(expected, Tick)))
			if err := r.Prog.Estimate(units * share); err != nil {
				close(abort)
				return err
			}
		}
	}
}
