package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/sam"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/apigw"
)

// Handlers are one function's Lambda handlers: the one for each kind of
// event the function has in the template.
type Handlers struct {
	HTTP     apigw.Handler   // HttpApi events, played by package apigw
	SQS      SQSHandler      // SQS events, played by an SQSPoller
	Schedule ScheduleHandler // Schedule events, played by a Schedule
	Stream   StreamHandler   // DynamoDB events, played by a StreamPoller
}

// HTTP returns the HTTP handlers by logical id, for apigw.New, each
// invoked as Lambda invokes a function: under a context that carries the
// Lambda context and the deadline of the function's Timeout in tpl (a
// handler sees it in ctx.Deadline()), a panic turned into an invocation
// error, and past the deadline the invocation abandoned with ErrAbandoned,
// which the gateway answers as HTTP API answers a function error. The
// client hanging up does not cancel the invocation, as in Lambda.
func HTTP(tpl *sam.Template, handlers map[string]Handlers) map[string]apigw.Handler {
	timeouts := map[string]time.Duration{}
	for _, f := range tpl.Functions() {
		timeouts[f.LogicalID] = FunctionTimeout(f)
	}
	out := map[string]apigw.Handler{}
	for id, h := range handlers {
		if h.HTTP == nil {
			continue
		}
		timeout, ok := timeouts[id]
		if !ok {
			timeout = DefaultTimeout
		}
		handler := h.HTTP
		out[id] = func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			resp, _, err := invoke(ctx, id, emulator.Region, timeout, func(ctx context.Context) (events.APIGatewayV2HTTPResponse, error) {
				return handler(ctx, ev)
			})
			return resp, err
		}
	}
	return out
}

// Options configure Start.
type Options struct {
	// SQS is the client of the queues (fauxqs).
	SQS *sqs.Client
	// QueueURL gives the local URL of the queue with this logical id: the
	// queue of an SQS event, or a stream mapping's on-failure destination.
	QueueURL func(logicalID string) (string, error)
	// Streams is the client of the tables' streams (DynamoDB Local).
	Streams *dynamodbstreams.Client
	// StreamARN gives the latest stream ARN of the table with this logical
	// id (DescribeTable's LatestStreamArn).
	StreamARN func(ctx context.Context, logicalID string) (string, error)
	// StreamIdleWait is a stream poller's pause after a GetRecords that
	// found nothing; 0 means DefaultStreamIdleWait.
	StreamIdleWait time.Duration
	// StreamRetryDelay is the wait before a failed batch of a stream is
	// first retried (it doubles each retry); 0 means
	// DefaultStreamRetryDelay.
	StreamRetryDelay time.Duration
	// CheckpointDir keeps each stream mapping's position in a file of its
	// own (<Function>.<Event>.json), so that a restart resumes where the
	// last run stopped; "" keeps positions in memory, and each start begins
	// at the mapping's StartingPosition.
	CheckpointDir string
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

// Start plays every SQS, DynamoDB and Schedule event of the template's
// functions until ctx is cancelled. It walks tpl.Functions() and their
// Events (there is no list of functions to keep): each SQS event gets an
// SQSPoller on the queue its Queue: !GetAtt names, each DynamoDB event a
// StreamPoller on the stream of the table its Stream: !GetAtt names, each
// Schedule event a Schedule; HttpApi events are package apigw's. Before starting anything it checks what
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
	var pollers []*SQSPoller          // their queues are read once everything else checks out
	var streamPollers []*StreamPoller // and their streams
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
			case sam.EventDynamoDB:
				p, err := streamPoller(tpl, f, name, h, o)
				if err != nil {
					return nil, err
				}
				if !p.Event.Enabled {
					r.triggers = append(r.triggers, fmt.Sprintf("%s <- DynamoDB %s stream: disabled (Enabled: false)", f.LogicalID, p.Event.Table))
					continue
				}
				r.triggers = append(r.triggers, p.banner())
				streamPollers = append(streamPollers, p)
				starts = append(starts, func() {
					if err := p.Run(ctx); err != nil {
						o.Log.Error("stream poller stopped", "function", p.Function, "event", p.Event.Name, "error", err.Error())
					}
				})
			default:
				return nil, fmt.Errorf("%s event %s has type %s, which the local runner does not play (it plays HttpApi, SQS, Schedule and DynamoDB)", f.LogicalID, name, typ)
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
		}{{h.HTTP != nil, sam.EventHTTPAPI}, {h.SQS != nil, sam.EventSQS}, {h.Schedule != nil, sam.EventSchedule}, {h.Stream != nil, sam.EventDynamoDB}} {
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
	for _, p := range streamPollers {
		if err := resolveStream(ctx, p, o); err != nil {
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

// streamPoller checks one DynamoDB event against the template and builds
// its poller, without its stream.
func streamPoller(tpl *sam.Template, f sam.Function, name string, h Handlers, o Options) (*StreamPoller, error) {
	ev, err := f.DynamoDBEvent(name)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (*StreamPoller, error) {
		return nil, fmt.Errorf("%s event %s (DynamoDB): %s", f.LogicalID, name, fmt.Sprintf(format, args...))
	}
	table, err := tpl.Table(ev.Table)
	if err != nil {
		return fail("%v", err)
	}
	if table.StreamViewType == "" {
		// CloudFormation cannot resolve the GetAtt of a table without one.
		return fail("table %s has no StreamSpecification, hence no StreamArn", ev.Table)
	}
	if ev.OnFailure != "" {
		q, err := tpl.Queue(ev.OnFailure)
		if err != nil {
			return fail("on-failure destination: %v", err)
		}
		if q.FIFO {
			return fail("the on-failure destination %s must be a standard queue, not FIFO", ev.OnFailure)
		}
	}
	if _, err := compileFilters(ev.Filters); err != nil {
		return fail("%v", err)
	}
	if h.Stream == nil {
		return nil, fmt.Errorf("%s has a DynamoDB event (%s) but no Stream handler", f.LogicalID, name)
	}
	p := &StreamPoller{
		Function: f.LogicalID, Event: ev, Timeout: FunctionTimeout(f), Handler: h.Stream,
		SQS: o.SQS, IdleWait: o.StreamIdleWait, RetryDelay: o.StreamRetryDelay, Log: o.Log,
	}
	if o.Streams != nil {
		p.Client = o.Streams
	}
	if o.CheckpointDir != "" {
		p.CheckpointFile = filepath.Join(o.CheckpointDir, f.LogicalID+"."+name+".json")
	}
	return p, nil
}

// banner is the poller's line in Triggers.
func (p *StreamPoller) banner() string {
	var extra string
	if n := len(p.Event.Filters); n == 1 {
		extra += ", 1 filter"
	} else if n > 1 {
		extra += fmt.Sprintf(", %d filters", n)
	}
	if p.Event.OnFailure != "" {
		extra += ", on failure " + p.Event.OnFailure
	}
	return fmt.Sprintf("%s <- DynamoDB %s stream (%s, batch %d%s, timeout %s)", p.Function, p.Event.Table, p.Event.StartingPosition, p.Event.BatchSize, extra, p.Timeout)
}

// resolveStream gives a stream poller its stream's ARN, checked with a
// DescribeStream, and its on-failure destination's URL.
func resolveStream(ctx context.Context, p *StreamPoller, o Options) error {
	if o.Streams == nil || o.StreamARN == nil {
		return errors.New("triggers: Options.Streams and Options.StreamARN are needed to play DynamoDB events")
	}
	var err error
	if p.StreamARN, err = o.StreamARN(ctx, p.Event.Table); err != nil {
		return fmt.Errorf("%s event %s (DynamoDB): stream of table %s: %w", p.Function, p.Event.Name, p.Event.Table, err)
	}
	if _, err := o.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(p.StreamARN), Limit: aws.Int32(1)}); err != nil {
		return fmt.Errorf("%s event %s (DynamoDB): describe stream %s: %w", p.Function, p.Event.Name, p.StreamARN, err)
	}
	if p.Event.OnFailure == "" {
		return nil
	}
	if o.SQS == nil || o.QueueURL == nil {
		return fmt.Errorf("triggers: Options.SQS and Options.QueueURL are needed for the on-failure destination of %s event %s", p.Function, p.Event.Name)
	}
	if p.DestinationURL, err = o.QueueURL(p.Event.OnFailure); err != nil {
		return fmt.Errorf("%s event %s (DynamoDB): on-failure destination %s: %w", p.Function, p.Event.Name, p.Event.OnFailure, err)
	}
	if _, err := QueueARN(ctx, o.SQS, p.DestinationURL); err != nil {
		return fmt.Errorf("%s event %s (DynamoDB): on-failure destination: %w", p.Function, p.Event.Name, err)
	}
	return nil
}

// Wait blocks until every poller and schedule has stopped: after Start's
// context is cancelled, once the invocations in flight have ended.
func (r *Runner) Wait() { r.wg.Wait() }

// Triggers describes what runs, one line per event, for the startup banner:
// "WorkerFunction <- SQS JobsQueue (batch 1, 2 pollers, timeout 2m0s)".
func (r *Runner) Triggers() []string { return append([]string(nil), r.triggers...) }
