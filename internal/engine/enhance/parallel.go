package enhance

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"genjobs/internal/engine"
)

// progressCeiling is where compute stops: the worker sets 1 at completion,
// so an engine never does.
const progressCeiling = 0.99

// progress turns units of work done into monotonically rising reports. Its
// mutex also keeps report calls from several goroutines apart: a Report
// need not be safe for concurrent use.
type progress struct {
	report  engine.Report
	mu      sync.Mutex
	total   float64 // every unit the job will do
	done    float64
	last    float64 // the last value reported
	err     error   // the first error: report's, ctx's or a worker's
	stopped atomic.Bool
}

func newProgress(report engine.Report, total float64) *progress {
	return &progress{report: report, total: math.Max(total, 1)}
}

// add records units done and reports the new fraction.
func (p *progress) add(units float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += units
	return p.sendLocked(p.done)
}

// estimate reports done+partial without recording partial: the share of a
// phase that cannot count its own work (a decoder, an encoder).
func (p *progress) estimate(partial float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sendLocked(p.done + partial)
}

func (p *progress) sendLocked(units float64) error {
	if p.err != nil {
		return p.err
	}
	v := math.Min(units/p.total*progressCeiling, progressCeiling)
	if v <= p.last {
		return nil
	}
	p.last = v
	if err := p.report(engine.Update{Progress: v}); err != nil {
		p.failLocked(err)
	}
	return p.err
}

// failure is the recorded error, if any.
func (p *progress) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// fail records err as the job's error unless one is already recorded.
func (p *progress) fail(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLocked(err)
	return p.err
}

func (p *progress) failLocked(err error) {
	if p.err == nil {
		p.err = err
		p.stopped.Store(true)
	}
}

// runner is a job's stop signal and progress, shared by the goroutines
// that work on it: all stop at the first error, cancellation or refused
// report.
type runner struct {
	ctx     context.Context
	prog    *progress
	workers int
}

func newRunner(ctx context.Context, prog *progress) *runner {
	return &runner{ctx: ctx, prog: prog, workers: runtime.GOMAXPROCS(0)}
}

// check reports whether work may go on, recording ctx's error if it ended.
func (r *runner) check() error {
	if r.prog.stopped.Load() {
		return r.prog.failure()
	}
	if err := r.ctx.Err(); err != nil {
		return r.prog.fail(err)
	}
	return nil
}

// tick is how often a phase that cannot count its work reports an estimate.
const tick = 100 * time.Millisecond

// unmetered runs fn, which cannot report its own progress, in a goroutine and
// reports an estimate meanwhile: units grow towards the phase's share as
// time passes, with expected the time fn is expected to take. It returns at
// once when ctx ends or a report is refused; abort is then closed so fn can
// give up early (fn's goroutine is left to finish on its own).
func (r *runner) unmetered(units float64, expected time.Duration, fn func(abort <-chan struct{}) error) error {
	if err := r.check(); err != nil {
		return err
	}
	abort := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := engine.Guard(func() (struct{}, error) { return struct{}{}, fn(abort) })
		done <- err
	}()
	start := time.Now()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return r.prog.fail(err)
			}
			return r.prog.add(units)
		case <-r.ctx.Done():
			close(abort)
			return r.prog.fail(r.ctx.Err())
		case <-ticker.C:
			// 1-e^-t/T rises for ever and never reaches the phase's share.
			share := 1 - math.Exp(-float64(time.Since(start))/float64(max(expected, tick)))
			if err := r.prog.estimate(units * share); err != nil {
				close(abort)
				return err
			}
		}
	}
}
