package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/infra/local/sam"
	"genjobs/internal/emulator"
)

// ScheduleHandler is a Lambda handler for EventBridge scheduled events.
type ScheduleHandler func(context.Context, events.EventBridgeEvent) error

// DefaultScheduleEvery is the local interval of every schedule: whatever
// the rate in template.yaml (rate(1 minute), rate(1 day)), the local runner
// invokes the function this often, so that a sweeper's work shows within
// seconds rather than minutes. Runner option ScheduleEvery changes it.
const DefaultScheduleEvery = 5 * time.Second

// Schedule plays one Schedule event: it invokes the function with an
// EventBridge "Scheduled Event" once at start (so that a restarted stack
// does its periodic work at once: the sweeper re-enqueues the jobs fauxqs
// forgot) and then every Every. One invocation at a time: a tick that comes
// while the previous invocation still runs is skipped, and so are ticks
// while an invocation abandoned at its timeout has not returned yet (in AWS
// the rule would fire regardless, and Lambda would have stopped the
// abandoned one). Failures are logged; EventBridge's retries are not played.
type Schedule struct {
	Function string            // the function's logical id
	Event    sam.ScheduleEvent // the rule's name for the event's resources
	// Every is the local interval; 0 means DefaultScheduleEvery.
	Every time.Duration
	// Timeout is the function's timeout (FunctionTimeout); 0 means Lambda's
	// default.
	Timeout time.Duration
	Handler ScheduleHandler
	Log     *slog.Logger
}

// Run invokes the handler at start and every interval until ctx is
// cancelled and the invocation in flight, if any, has ended.
func (s *Schedule) Run(ctx context.Context) error {
	if s.Handler == nil {
		return fmt.Errorf("%s event %s: the schedule needs a handler", s.Function, s.Event.Name)
	}
	every := s.Every
	if every <= 0 {
		every = DefaultScheduleEvery
	}
	var running <-chan struct{} // an abandoned invocation's handler
	warned := false
	tick := time.NewTicker(every)
	defer tick.Stop()
	for ctx.Err() == nil {
		if running != nil {
			select {
			case <-running:
				running = nil
			default:
				if !warned {
					s.log().Warn("scheduled invocations skipped until the abandoned one returns", "function", s.Function, "rule", s.Event.RuleName)
					warned = true
				}
			}
		}
		if running == nil {
			running, warned = s.fire(ctx), false
			select { // a tick that came during the invocation is skipped
			case <-tick.C:
			default:
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	return nil
}

// fire invokes the handler once and, when the invocation was abandoned,
// returns the channel closed when its handler returns.
func (s *Schedule) fire(ctx context.Context) <-chan struct{} {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ev := events.EventBridgeEvent{
		Version:    "0",
		ID:         newRequestID(),
		DetailType: "Scheduled Event",
		Source:     "aws.events",
		AccountID:  localAccount,
		Time:       time.Now().UTC().Truncate(time.Second),
		Region:     emulator.Region,
		Resources:  []string{fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", emulator.Region, localAccount, s.Event.RuleName)},
		Detail:     json.RawMessage(`{}`),
	}
	_, inv, err := invoke(ctx, s.Function, emulator.Region, timeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.Handler(ctx, ev)
	})
	log := s.log().With("function", s.Function, "rule", s.Event.RuleName, "request_id", inv.RequestID, "event_id", ev.ID)
	switch {
	case errors.Is(err, ErrAbandoned):
		log.Error("scheduled invocation abandoned at the function's timeout", "timeout", timeout)
		return inv.Done
	case err != nil:
		log.Error("scheduled invocation failed", "error", err.Error())
	}
	return nil
}

func (s *Schedule) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}
