package sqsbatch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/sqsbatch"
)

// body is a test message: it names a number, and what its handler does.
type body struct {
	N    int    `json:"n"`
	Does string `json:"does"` // "ok", "fail", "panic"
}

func (b body) Valid() bool { return b.N > 0 }

func event(bodies ...string) events.SQSEvent {
	var e events.SQSEvent
	for i, b := range bodies {
		e.Records = append(e.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i+1), Body: b})
	}
	return e
}

// recorder is a Batch's handler and failure hook, noting what they saw.
type recorder struct {
	mu      sync.Mutex
	handled []string
	failed  map[string]error
}

func (r *recorder) handle(_ context.Context, m events.SQSMessage, b body) error {
	r.mu.Lock()
	r.handled = append(r.handled, m.MessageId)
	r.mu.Unlock()
	switch b.Does {
	case "fail":
		return errors.New("the store is unavailable")
	case "panic":
		panic("a bug")
	}
	return nil
}

func (r *recorder) fail(_ context.Context, m events.SQSMessage, _ body, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = map[string]error{}
	}
	r.failed[m.MessageId] = err
}

func ids(resp events.SQSEventResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func batch(r *recorder, parallel bool, logs *bytes.Buffer) sqsbatch.Batch[body] {
	return sqsbatch.Batch[body]{Handle: r.handle, Failed: r.fail, Parallel: parallel, Log: slog.New(slog.NewJSONHandler(logs, nil))}
}

// Every failing message, and only those, is reported, in the batch's order,
// each handled once; none is lost, one after another or in parallel.
func TestEveryFailingMessageIsReportedAndNoneLost(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		r := &recorder{}
		var bodies, want []string
		for i := 1; i <= 10; i++ {
			does := "ok"
			if i%3 == 0 {
				does = "fail"
			}
			bodies = append(bodies, fmt.Sprintf(`{"n":%d,"does":%q}`, i, does))
			if does == "fail" {
				want = append(want, fmt.Sprintf("m%d", i))
			}
		}
		resp, err := batch(r, parallel, &bytes.Buffer{}).Run(context.Background(), event(bodies...))
		if err != nil || !slices.Equal(ids(resp), want) {
			t.Errorf("parallel %v: reported %v, %v; want %v", parallel, ids(resp), err, want)
		}
		slices.Sort(r.handled)
		if len(r.handled) != 10 || len(slices.Compact(r.handled)) != 10 {
			t.Errorf("parallel %v: handled %v; want each of the 10 messages once", parallel, r.handled)
		}
		if len(r.failed) != len(want) {
			t.Errorf("parallel %v: Failed told of %v; want %v", parallel, r.failed, want)
		}
	}
}

// A panic fails its own message, as an error Failed is told of, and the
// rest of the batch goes on.
func TestAPanicFailsOnlyItsMessage(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		r := &recorder{}
		resp, err := batch(r, parallel, &bytes.Buffer{}).Run(context.Background(),
			event(`{"n":1,"does":"panic"}`, `{"n":2,"does":"ok"}`, `{"n":3,"does":"fail"}`))
		if err != nil || !slices.Equal(ids(resp), []string{"m1", "m3"}) {
			t.Errorf("parallel %v: reported %v, %v; want [m1 m3]", parallel, ids(resp), err)
		}
		if len(r.handled) != 3 {
			t.Errorf("parallel %v: handled %v; want all three", parallel, r.handled)
		}
		if e := r.failed["m1"]; e == nil || e.Error() != "panic: a bug" {
			t.Errorf("parallel %v: Failed was told %v for the panic; want \"panic: a bug\"", parallel, e)
		}
	}
}

// A body that does not decode, or does not name what the handler needs, is
// dropped with a log line naming its message: it is neither handled nor
// reported, since no retry makes it readable.
func TestUnreadableMessagesAreDroppedAndLogged(t *testing.T) {
	r := &recorder{}
	var logs bytes.Buffer
	resp, err := batch(r, false, &logs).Run(context.Background(), event(`{not json`, `{"n":0}`, `{"n":3,"does":"ok"}`))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("reported %v, %v; want nothing", ids(resp), err)
	}
	if !slices.Equal(r.handled, []string{"m3"}) {
		t.Errorf("handled %v; want only m3", r.handled)
	}
	for _, id := range []string{"m1", "m2"} {
		if !strings.Contains(logs.String(), `"msg":"dropping an unreadable message","message_id":"`+id+`"`) {
			t.Errorf("no log line drops %s:\n%s", id, logs.String())
		}
	}
}

// After the invocation's context has ended, every message is still handed
// to its handler, which says what it needs: a handler that could not
// finish fails its message, which is reported; none is deleted unseen.
func TestAfterTheContextEndsEveryMessageGetsItsAnswer(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var seen []string
		b := sqsbatch.Batch[body]{
			Handle: func(ctx context.Context, m events.SQSMessage, _ body) error {
				mu.Lock()
				seen = append(seen, m.MessageId)
				mu.Unlock()
				if m.MessageId == "m1" {
					cancel() // the deadline comes during the first message
					return nil
				}
				return ctx.Err()
			},
			Parallel: parallel,
			Log:      slog.New(slog.DiscardHandler),
		}
		if parallel {
			cancel() // in parallel, no order: the context ends before the batch
		}
		defer cancel()
		resp, _ := b.Run(ctx, event(`{"n":1}`, `{"n":2}`, `{"n":3}`))
		if want := []string{"m2", "m3"}; !slices.Equal(ids(resp), want) {
			t.Errorf("parallel %v: reported %v; want %v", parallel, ids(resp), want)
		}
		if len(seen) != 3 {
			t.Errorf("parallel %v: handled %v; want all three", parallel, seen)
		}
	}
}

// Parallel handles a batch's messages at the same time: each handler
// waits here until all of them have started, which only a parallel loop
// lets happen (the wait is bounded, so a sequential loop fails the test
// rather than hanging it).
func TestParallelHandlesTheMessagesAtOnce(t *testing.T) {
	const n = 5
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	b := sqsbatch.Batch[body]{
		Handle: func(ctx context.Context, _ events.SQSMessage, _ body) error {
			started.Done()
			select {
			case <-all:
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("the other messages never started")
			}
		},
		Parallel: true,
		Log:      slog.New(slog.DiscardHandler),
	}
	resp, _ := b.Run(context.Background(), event(`{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`, `{"n":5}`))
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("reported %v; want every message handled at once", ids(resp))
	}
}
