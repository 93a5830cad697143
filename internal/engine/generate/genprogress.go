package generate

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"genjobs/internal/engine"
)

// genTick is how often Progress.wait reports while a step that cannot
// report by itself runs: well under the second a cancellation may take.
const genTick = 100 * time.Millisecond

// Progress reports rising progress below 1 and notices cancellation; the
// worker reports 1 itself when it has stored the outputs.
type Progress struct {
	ctx    context.Context
	report engine.Report
	last   float64
}

// NewProgress reports to report until ctx ends.
func NewProgress(ctx context.Context, report engine.Report) *Progress {
	return &Progress{ctx: ctx, report: report}
}

// to reports progress frac (clamped to rise and stay below 1), with an
// optional preview. It returns ctx's error or report's, which the engine
// must return at once.
func (p *Progress) To(frac float64, preview *engine.File) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	frac = min(max(frac, p.last), 0.99)
	p.last = frac
	return p.report(engine.Update{Progress: frac, Preview: preview})
}

// wait runs step, which cannot report by itself (decoding an input, encoding
// a PNG), on another goroutine and keeps reporting, creeping from the last
// progress toward limit, until it ends. When ctx ends or report fails, wait
// cancels step's context (step's reads and writes then fail, see
// genCtxReader) and returns at once.
func (p *Progress) wait(limit float64, step func(ctx context.Context) error) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- step(ctx) }()
	tick := time.NewTicker(genTick)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if err := p.To(p.last+(limit-p.last)*0.2, nil); err != nil {
				return err
			}
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
}

// genWorkers is how many goroutines share a CPU-bound step: Lambda gives
// up to 6 vCPUs, and more than that only costs memory.
func genWorkers() int {
	return min(max(runtime.GOMAXPROCS(0), 1), 6)
}

// genParallelRows calls paint on disjoint row ranges covering [y0, y1),
// concurrently, and returns when all are done.
func genParallelRows(y0, y1 int, paint func(y0, y1 int)) {
	n := min(genWorkers(), y1-y0)
	if n <= 1 {
		paint(y0, y1)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		a, b := y0+(y1-y0)*i/n, y0+(y1-y0)*(i+1)/n
		wg.Go(func() { paint(a, b) })
	}
	wg.Wait()
}

// Recover, deferred by Run, turns a panic on Run's goroutine into the
// job's failure, as Enhance does: a bug fails the job, not the worker.
func Recover(model string, files *[]engine.File, err *error) {
	if v := recover(); v != nil {
		*files, *err = nil, fmt.Errorf("engine: %s: panic: %v", model, v)
	}
}
