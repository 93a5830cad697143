package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/gateway"
	"genjobs/infra/local/sam"
)

// Handlers are one function's Lambda handlers: the one for each kind of
// event the function has in the template.
type Handlers struct {
	HTTP     gateway.Handler // HttpApi events, played by package gateway
	SQS      SQSHandler      // SQS events, played by an SQSPoller
	Schedule ScheduleHandler // Schedule events, played by a Schedule
}

// HTTP returns the HTTP handlers by logical id, for gateway.New.
func HTTP(handlers map[string]Handlers) map[string]gateway.Handler {
	out := map[string]gateway.Handler{}
	for id, h := range handlers {
		if h.HTTP != nil {
			out[id] = h.HTTP
		}
	}
	return out
}

// Options configure Start.
type Options struct {
	// SQS is the client of the queues (fauxqs).
	SQS *sqs.Client
	// QueueURL gives the local URL of the queue with this logical id.
	QueueURL func(logicalID string) (string, error)
	// Pollers is the number of concurrent pollers per SQS mapping; 0 means
	// DefaultPollers.
	Pollers int
	// PollWait is the long-poll wait of each receive; 0 means
	// DefaultPollWait (20 s, as Lambda).
	PollWait time.Duration
	// ScheduleEvery is the local interval of every schedule, whatever its
	// rate; 0 means DefaultScheduleEvery (5 s).
	ScheduleEvery time.Duration
	Log           *slog.Logger
}

// Runner runs the event sources Start found in the template.
type Runner struct {
	wg       sync.WaitGroup
	triggers []string
}

// Start plays every SQS and Schedule event of the template's functions
// until ctx is cancelled. It walks tpl.Functions() and their Events (there
// is no list of functions to keep): each SQS event gets an SQSPoller on the
// queue its Queue: !GetAtt names, each Schedule event a Schedule; HttpApi
// events are package gateway's. Before starting anything it checks what
// SAM and CloudFormation would refuse on deploy, and that the handlers and
// the template agree: every function with an event has the handler for its
// kind, every handler belongs to a function of the template with such an
// event, and every event is of a type the runner plays. Disabled mappings
// and schedules (Enabled: false) are checked but not started.
func Start(ctx context.Context, tpl *sam.Template, handlers map[string]Handlers, o Options) (*Runner, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if err := checkPollWait(o.PollWait); err != nil {
		return nil, fmt.Errorf("triggers: %w", err)
	}
	var starts []func()
	var pollers []*SQSPoller // their queues are read once everything else checks out
	r := &Runner{}
	used := map[string]map[string]bool{} // function -> kinds of events it has
	for _, f := range tpl.Functions() {
		h := handlers[f.LogicalID]
		used[f.LogicalID] = map[string]bool{}
		names := make([]string, 0, len(f.Events))
		for name := range f.Events {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			typ := f.Events[name].Type
			used[f.LogicalID][typ] = true
			switch typ {
			case sam.EventHTTPAPI:
				if h.HTTP == nil {
					return nil, fmt.Errorf("%s has an HttpApi event (%s) but no HTTP handler", f.LogicalID, name)
				}
			case sam.EventSQS:
				p, err := sqsPoller(tpl, f, name, h, o)
				if err != nil {
					return nil, err
				}
				if !p.Event.Enabled {
					r.triggers = append(r.triggers, fmt.Sprintf("%s <- SQS %s: disabled (Enabled: false)", f.LogicalID, p.Event.Queue))
					continue
				}
				n := p.Pollers
				if n == 0 {
					n = DefaultPollers
				}
				r.triggers = append(r.triggers, fmt.Sprintf("%s <- SQS %s (batch %d, %d pollers, timeout %s)", f.LogicalID, p.Event.Queue, p.Event.BatchSize, n, p.Timeout))
				pollers = append(pollers, p)
				starts = append(starts, func() {
					if err := p.Run(ctx); err != nil {
						o.Log.Error("SQS poller stopped", "function", p.Function, "event", p.Event.Name, "error", err.Error())
					}
				})
			case sam.EventSchedule:
				ev, err := f.ScheduleEvent(name)
				if err != nil {
					return nil, err
				}
				if h.Schedule == nil {
					return nil, fmt.Errorf("%s has a Schedule event (%s) but no Schedule handler", f.LogicalID, name)
				}
				s := &Schedule{Function: f.LogicalID, Event: ev, Every: o.ScheduleEvery, Timeout: FunctionTimeout(f), Handler: h.Schedule, Log: o.Log}
				if !ev.Enabled {
					r.triggers = append(r.triggers, fmt.Sprintf("%s <- %s: disabled", f.LogicalID, ev.Expression))
					continue
				}
				every := s.Every
				if every <= 0 {
					every = DefaultScheduleEvery
				}
				r.triggers = append(r.triggers, fmt.Sprintf("%s <- %s, locally every %s and once at start", f.LogicalID, ev.Expression, every))
				starts = append(starts, func() { _ = s.Run(ctx) })
			default:
				return nil, fmt.Errorf("%s event %s has type %s, which the local runner does not play (it plays HttpApi, SQS and Schedule)", f.LogicalID, name, typ)
			}
		}
	}
	ids := make([]string, 0, len(handlers))
	for id := range handlers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		h := handlers[id]
		kinds, ok := used[id]
		if !ok {
			return nil, fmt.Errorf("handlers are given for %s, which is not a function of the template", id)
		}
		for _, c := range []struct {
			set  bool
			kind string
		}{{h.HTTP != nil, sam.EventHTTPAPI}, {h.SQS != nil, sam.EventSQS}, {h.Schedule != nil, sam.EventSchedule}} {
			if c.set && !kinds[c.kind] {
				return nil, fmt.Errorf("%s has a handler for %s events but no %s event in the template", id, c.kind, c.kind)
			}
		}
	}
	for _, p := range pollers {
		if err := resolveQueue(ctx, p, o); err != nil {
			return nil, err
		}
	}
	for _, start := range starts {
		r.wg.Go(start)
	}
	return r, nil
}

// sqsPoller checks one SQS event against the template and builds its
// poller, without its queue.
func sqsPoller(tpl *sam.Template, f sam.Function, name string, h Handlers, o Options) (*SQSPoller, error) {
	ev, err := f.SQSEvent(name)
	if err != nil {
		return nil, err
	}
	q, err := tpl.Queue(ev.Queue)
	if err != nil {
		return nil, fmt.Errorf("%s event %s (SQS): %w", f.LogicalID, name, err)
	}
	timeout := FunctionTimeout(f)
	if time.Duration(q.VisibilityTimeout)*time.Second < timeout {
		// The error CloudFormation gives when it creates such a mapping.
		return nil, fmt.Errorf("%s event %s (SQS): queue visibility timeout: %d seconds is less than function timeout: %d seconds",
			f.LogicalID, name, q.VisibilityTimeout, int(timeout/time.Second))
	}
	if q.FIFO && ev.BatchSize > 10 {
		return nil, fmt.Errorf("%s event %s (SQS): a FIFO queue takes a BatchSize of at most 10", f.LogicalID, name)
	}
	if h.SQS == nil {
		return nil, fmt.Errorf("%s has an SQS event (%s) but no SQS handler", f.LogicalID, name)
	}
	return &SQSPoller{
		Function: f.LogicalID, Event: ev, Timeout: timeout, Handler: h.SQS,
		Client: o.SQS, Pollers: o.Pollers, PollWait: o.PollWait, Log: o.Log,
	}, nil
}

// resolveQueue gives a poller its queue's URL and ARN.
func resolveQueue(ctx context.Context, p *SQSPoller, o Options) error {
	if o.SQS == nil || o.QueueURL == nil {
		return errors.New("triggers: Options.SQS and Options.QueueURL are needed to play SQS events")
	}
	var err error
	if p.QueueURL, err = o.QueueURL(p.Event.Queue); err != nil {
		return fmt.Errorf("%s event %s (SQS): queue %s: %w", p.Function, p.Event.Name, p.Event.Queue, err)
	}
	if p.QueueARN, err = QueueARN(ctx, o.SQS, p.QueueURL); err != nil {
		return fmt.Errorf("%s event %s (SQS): %w", p.Function, p.Event.Name, err)
	}
	return nil
}

// Wait blocks until every poller and schedule has stopped: after Start's
// context is cancelled, once the invocations in flight have ended.
func (r *Runner) Wait() { r.wg.Wait() }

// Triggers describes what runs, one line per event, for the startup banner:
// "WorkerFunction <- SQS JobsQueue (batch 1, 2 pollers, timeout 2m0s)".
func (r *Runner) Triggers() []string { return append([]string(nil), r.triggers...) }
