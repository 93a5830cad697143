// Package sqsbatch is the loop of the functions an SQS queue invokes with
// partial batch responses: it hands each message's body to the function's
// handler and reports the messages to deliver again, so that one failing
// message fails only itself and no failing message is deleted unseen.
package sqsbatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// Body is a message's body as its handler reads it: JSON, and Valid when
// it names what the handler needs.
type Body interface {
	Valid() bool
}

// Batch handles the messages of one queue's batches.
type Batch[T Body] struct {
	// Handle handles one message: nil when the message is done with (the
	// event source mapping deletes it), an error when it must come back.
	Handle func(ctx context.Context, m events.SQSMessage, body T) error
	// Failed, when set, is told of each message Handle failed or panicked
	// on, before the message is reported: it logs the failure with what
	// the function knows of it, and may act on it (ask for the message
	// back sooner).
	Failed func(ctx context.Context, m events.SQSMessage, body T, err error)
	// Parallel handles a batch's messages at the same time, each on its
	// own goroutine (Handle and Failed must allow it); otherwise one after
	// another, in order.
	Parallel bool
	// Log records the messages dropped as unreadable.
	Log *slog.Logger
}

// Run handles e's messages and returns the response that asks SQS to
// deliver again those whose Handle failed, in the batch's order. A body
// that does not decode as T, or is not Valid, is logged and dropped: no
// retry can make it readable. A panic in Handle fails its message only.
// Every message is handed to Handle, after ctx has ended too: Handle says
// what a message it cannot finish needs. The error is always nil: an
// error would make Lambda deliver the whole batch again.
func (b Batch[T]) Run(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
	failed := make([]bool, len(e.Records))
	if b.Parallel {
		var wg sync.WaitGroup
		for i, m := range e.Records {
			wg.Go(func() { failed[i] = !b.one(ctx, m) })
		}
		wg.Wait()
	} else {
		for i, m := range e.Records {
			failed[i] = !b.one(ctx, m)
		}
	}
	var resp events.SQSEventResponse
	for i, m := range e.Records {
		if failed[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

// one handles one message and reports whether it is done with.
func (b Batch[T]) one(ctx context.Context, m events.SQSMessage) bool {
	var body T
	if err := json.Unmarshal([]byte(m.Body), &body); err != nil || !body.Valid() {
		b.Log.Error("dropping an unreadable message", "message_id", m.MessageId)
		return true
	}
	err := b.safely(ctx, m, body)
	if err == nil {
		return true
	}
	if b.Failed != nil {
		b.Failed(ctx, m, body, err)
	}
	return false
}

// safely runs Handle and turns a panic (a bug of ours, never the
// sender's) into an error, so that one message does not fail its batch.
func (b Batch[T]) safely(ctx context.Context, m events.SQSMessage, body T) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return b.Handle(ctx, m, body)
}
