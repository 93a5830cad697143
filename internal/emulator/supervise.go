package emulator

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Defaults of SuperviseOptions.
const (
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 30 * time.Second
	DefaultStableAfter = time.Minute
)

// SuperviseOptions say how a Supervisor restarts its emulator.
type SuperviseOptions struct {
	Log *slog.Logger
	// Restarted is called after each restart, once the emulator answers
	// again: to create what an emulator that keeps nothing has lost (the
	// queues and buckets of fauxqs). An error is logged; the emulator stays.
	Restarted func(ctx context.Context) error
	// The first restart after a stable run is at once; each further exit
	// within StableAfter of the last start waits twice as long as the one
	// before, from MinBackoff up to MaxBackoff, so that an emulator that
	// cannot stay up is retried, and logged, rather than spun.
	MinBackoff, MaxBackoff, StableAfter time.Duration
}

// Supervisor keeps one emulator running: when its process exits by itself
// (a crash, a kill -9) it logs the exit and starts it again with the same
// options on the same port, so that every client's endpoint stays valid,
// then calls Restarted. DynamoDB Local started with a DBPath keeps its data
// across the restart; fauxqs starts empty.
type Supervisor struct {
	o    SuperviseOptions
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	cur      *Process
	restarts int
	cancel   context.CancelFunc
}

// Supervise watches p until Stop.
func Supervise(p *Process, o SuperviseOptions) *Supervisor {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.StableAfter <= 0 {
		o.StableAfter = DefaultStableAfter
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Supervisor{o: o, stop: make(chan struct{}), done: make(chan struct{}), cur: p, cancel: cancel}
	go s.watch(ctx)
	return s
}

// Process is the emulator's current process.
func (s *Supervisor) Process() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Endpoint is the emulator's base URL, the same across restarts.
func (s *Supervisor) Endpoint() string { return s.Process().Endpoint() }

// Restarts is how many times the emulator has been started again.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Stop ends the supervision, a restart under way included, and stops the
// current process. Like Process.Stop, it reports an emulator that had
// exited by itself and was not running again.
func (s *Supervisor) Stop() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.cancel()
	<-s.done
	return s.Process().Stop()
}

func (s *Supervisor) watch(ctx context.Context) {
	defer close(s.done)
	quick := 0 // exits in a row, each within StableAfter of its start
	for {
		p := s.Process()
		select {
		case <-s.stop:
			return
		case <-p.Done():
		}
		ran := time.Since(p.started)
		if ran >= s.o.StableAfter {
			quick = 0
		}
		quick++
		wait := time.Duration(0)
		if quick > 1 {
			wait = s.o.MinBackoff << min(quick-2, 20)
			wait = min(wait, s.o.MaxBackoff)
		}
		log := s.o.Log.With("emulator", p.name, "port", p.port, "log_file", p.logPath)
		attrs := []any{"pid", p.pid, "exit", exitText(p.waitErr), "ran", ran.Round(time.Millisecond), "restart_in", wait}
		if tail := lastLines(p.logTail(), 3); tail != "" {
			attrs = append(attrs, "log_tail", tail)
		}
		if quick >= 3 {
			log.Error("the emulator keeps exiting soon after it starts; restarting with backoff", append(attrs, "exits_in_a_row", quick)...)
		} else {
			log.Error("the emulator exited; restarting it on the same port", attrs...)
		}
		_ = p.Stop() // reaps what is left of its process group; the exit is logged above
		for {
			if !s.sleep(wait) {
				return
			}
			begin := time.Now()
			np, err := startOnce(ctx, p.spec, p.port)
			if err == nil {
				s.mu.Lock()
				s.cur = np
				s.restarts++
				s.mu.Unlock()
				log.Warn("the emulator is running again", "pid", np.pid, "took", time.Since(begin).Round(time.Millisecond))
				break
			}
			if ctx.Err() != nil {
				return
			}
			wait = min(max(2*wait, s.o.MinBackoff), s.o.MaxBackoff)
			log.Error("the emulator could not be restarted; trying again", "error", err.Error(), "retry_in", wait)
		}
		if s.o.Restarted != nil {
			if err := s.o.Restarted(ctx); err != nil && ctx.Err() == nil {
				log.Error("setting the restarted emulator up failed", "error", err.Error())
			}
		}
	}
}

// sleep waits d, or returns false at Stop.
func (s *Supervisor) sleep(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-s.stop:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// lastLines is the last n non-empty lines of a logTail.
func lastLines(tail string, n int) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "--- end of ") && !strings.HasPrefix(l, "(log ") {
			out = append([]string{l}, out...)
		}
	}
	return strings.Join(out, " | ")
}

// Supervised is the emulators of a Stack under a Supervisor each.
type Supervised struct {
	DynamoDB, Fauxqs, Moto *Supervisor
}

// Supervise puts the emulators under supervision (moto if the stack has
// it), with the same options: o.Restarted runs after any of them is
// restarted, so it must be harmless for those that kept their state. Stop
// the result rather than s from then on.
func (s *Stack) Supervise(o SuperviseOptions) *Supervised {
	sup := &Supervised{DynamoDB: Supervise(s.DynamoDB, o), Fauxqs: Supervise(s.Fauxqs, o)}
	if s.Moto != nil {
		sup.Moto = Supervise(s.Moto, o)
	}
	return sup
}

// Stop stops the supervisors and their emulators, at once.
func (s *Supervised) Stop() error {
	sups := []*Supervisor{s.DynamoDB, s.Fauxqs}
	if s.Moto != nil {
		sups = append(sups, s.Moto)
	}
	errs := make(chan error, len(sups))
	for _, sup := range sups {
		go func() { errs <- sup.Stop() }()
	}
	var all []error
	for range sups {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
