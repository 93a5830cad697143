package triggers

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

const sweeperTemplate = `
Resources:
  SweeperFunction:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 1
      Events:
        EveryMinute:
          Type: Schedule
          Properties:
            Schedule: rate(1 minute)
`

// ticks records scheduled invocations.
type ticks struct {
	mu        sync.Mutex
	events    []events.EventBridgeEvent
	running   int
	most      int // the most invocations seen running at once
	deadlines []time.Duration
	requests  []string
	work      func(n int, ctx context.Context) // what invocation n does
}

func (k *ticks) handle(ctx context.Context, e events.EventBridgeEvent) error {
	k.mu.Lock()
	k.events = append(k.events, e)
	n := len(k.events)
	k.running++
	k.most = max(k.most, k.running)
	dl, _ := ctx.Deadline()
	k.deadlines = append(k.deadlines, time.Until(dl))
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		k.requests = append(k.requests, lc.AwsRequestID)
	}
	k.mu.Unlock()
	if k.work != nil {
		k.work(n, ctx)
	}
	k.mu.Lock()
	k.running--
	k.mu.Unlock()
	return nil
}

func (k *ticks) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.events)
}

func TestScheduleInvokesAtTheCompressedInterval(t *testing.T) {
	k := &ticks{}
	log, logs := newLog()
	r := run(t, parse(t, sweeperTemplate), map[string]Handlers{"SweeperFunction": {Schedule: k.handle}},
		Options{ScheduleEvery: 50 * time.Millisecond, Log: log})
	if got := r.Triggers(); len(got) != 1 || got[0] != "SweeperFunction <- rate(1 minute), locally every 50ms and once at start" {
		t.Errorf("Triggers() = %q", got)
	}
	// rate(1 minute) plays every 50 ms: five invocations come within
	// seconds, not minutes.
	eventually(t, "five invocations", func() bool { return k.count() >= 5 })

	k.mu.Lock()
	defer k.mu.Unlock()
	ids := map[string]bool{}
	for i, e := range k.events {
		if e.DetailType != "Scheduled Event" || e.Source != "aws.events" || e.Version != "0" || e.AccountID != "000000000000" || e.Region != "us-east-1" ||
			len(e.Resources) != 1 || e.Resources[0] != "arn:aws:events:us-east-1:000000000000:rule/SweeperFunctionEveryMinute" ||
			string(e.Detail) != "{}" || e.Time.IsZero() || e.Time.Location() != time.UTC {
			t.Errorf("event %d: %+v", i, e)
		}
		if ids[e.ID] {
			t.Errorf("event id %s repeated", e.ID)
		}
		ids[e.ID] = true
		if k.deadlines[i] <= 0 || k.deadlines[i] > time.Second {
			t.Errorf("invocation %d had %s left; want at most the function's 1 s timeout", i, k.deadlines[i])
		}
	}
	if len(k.requests) != len(k.events) {
		t.Errorf("%d of %d invocations had a Lambda context", len(k.requests), len(k.events))
	}
	if s := logs.String(); s != "" {
		t.Errorf("successful invocations logged: %s", s)
	}
}

func TestScheduleRunsOnceAtStart(t *testing.T) {
	k := &ticks{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// An interval no test waits for: the one invocation is the one at start.
	r, err := Start(ctx, parse(t, sweeperTemplate), map[string]Handlers{"SweeperFunction": {Schedule: k.handle}},
		Options{ScheduleEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the invocation at start", func() bool { return k.count() == 1 })
	cancel()
	r.Wait()
	if n := k.count(); n != 1 {
		t.Errorf("%d invocations; want the one at start", n)
	}
}

func TestScheduleInvokesOneAtATime(t *testing.T) {
	// Each invocation outlasts several intervals.
	k := &ticks{work: func(int, context.Context) { time.Sleep(60 * time.Millisecond) }}
	run(t, parse(t, sweeperTemplate), map[string]Handlers{"SweeperFunction": {Schedule: k.handle}},
		Options{ScheduleEvery: 10 * time.Millisecond})
	eventually(t, "four invocations", func() bool { return k.count() >= 4 })
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.most != 1 {
		t.Errorf("%d invocations ran at once; want 1", k.most)
	}
}

func TestScheduledInvocationPastTheTimeoutIsAbandoned(t *testing.T) {
	k := &ticks{work: func(n int, ctx context.Context) {
		if n == 1 { // overruns the 1 s timeout, then returns
			<-ctx.Done()
			time.Sleep(300 * time.Millisecond)
		}
	}}
	log, logs := newLog()
	run(t, parse(t, sweeperTemplate), map[string]Handlers{"SweeperFunction": {Schedule: k.handle}},
		Options{ScheduleEvery: 50 * time.Millisecond, Log: log})
	eventually(t, "invocations after the abandoned one", func() bool { return k.count() >= 3 })
	lines := logs.lines("invocation abandoned")
	if len(lines) != 1 || lines[0]["function"] != "SweeperFunction" || lines[0]["rule"] != "SweeperFunctionEveryMinute" || lines[0]["event_id"] != k.events[0].ID {
		t.Errorf("want one abandon line naming the function, the rule and event %s; logs:\n%s", k.events[0].ID, logs)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	// The next invocation waited for the abandoned handler to return.
	if k.most != 1 {
		t.Errorf("%d invocations ran at once; want 1", k.most)
	}
}
