package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"genjobs/infra/local/sam"
)

// SQSHandler is a Lambda handler for SQS events.
type SQSHandler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Defaults of an SQSPoller.
const (
	// DefaultPollers is how many batches of one mapping run at once: Lambda
	// starts with more pollers and scales out; two keep one machine calm
	// while still showing that invocations overlap.
	DefaultPollers = 2
	// DefaultPollWait is Lambda's long-poll wait (the most SQS allows).
	DefaultPollWait = 20 * time.Second
)

// SQSPoller plays one SQS event source mapping: it long-polls the queue and
// invokes the function with each batch, as Lambda does.
//
//   - A batch is one ReceiveMessage of up to BatchSize messages (at most 10
//     per receive); with MaximumBatchingWindow set, further receives add to
//     the batch until it holds BatchSize messages or the window, counted from
//     the first receive, has passed.
//   - The handler runs under a context that ends at the function's timeout;
//     an invocation past it is abandoned and counts as failed.
//   - A failed invocation (an error, a panic, the timeout) deletes nothing:
//     the batch comes back once its visibility timeout passes.
//   - On success, every message is deleted; with ReportBatchItemFailures,
//     every message except those listed in BatchItemFailures. A listed id
//     that is empty or not in the batch fails the whole batch, as in Lambda.
//   - The queue's RedrivePolicy moves a message received more than
//     maxReceiveCount times to the dead-letter queue. fauxqs applies it by
//     itself on receive, as SQS does, so the poller does nothing for it.
//
// Stopping (cancelling Run's context) ends the receives at once and lets
// in-flight invocations finish or reach their timeout.
type SQSPoller struct {
	Function string       // the function's logical id
	Event    sam.SQSEvent // batch size, batching window, response types
	QueueURL string
	QueueARN string // the records' eventSourceARN; read from the queue when empty
	// Timeout is the function's timeout (FunctionTimeout); 0 means Lambda's
	// default.
	Timeout time.Duration
	Handler SQSHandler
	Client  *sqs.Client
	// Pollers is how many batches may be in flight at once; 0 means
	// DefaultPollers.
	Pollers int
	// PollWait is each receive's long-poll wait, whole seconds in 1..20 s; 0
	// means DefaultPollWait. Tests shorten it: a receive abandoned by a stop
	// still takes a message that arrives before its wait ends (in SQS too).
	PollWait time.Duration
	Log      *slog.Logger
}

// Run polls until ctx is cancelled and the in-flight invocations have
// ended. It returns an error only for a poller it cannot start.
func (p *SQSPoller) Run(ctx context.Context) error {
	if p.Handler == nil || p.Client == nil || p.QueueURL == "" {
		return fmt.Errorf("%s event %s: the poller needs a handler, a client and a queue URL", p.Function, p.Event.Name)
	}
	if err := checkPollWait(p.PollWait); err != nil {
		return fmt.Errorf("%s event %s: %w", p.Function, p.Event.Name, err)
	}
	if p.QueueARN == "" {
		arn, err := QueueARN(ctx, p.Client, p.QueueURL)
		if err != nil {
			return fmt.Errorf("%s event %s: %w", p.Function, p.Event.Name, err)
		}
		p.QueueARN = arn
	}
	n := p.Pollers
	if n <= 0 {
		n = DefaultPollers
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { p.poll(ctx) })
	}
	wg.Wait()
	return nil
}

// checkPollWait refuses a long-poll wait SQS would refuse; 0 is the default.
func checkPollWait(d time.Duration) error {
	if d != 0 && (d < time.Second || d > 20*time.Second || d%time.Second != 0) {
		return fmt.Errorf("the poll wait must be whole seconds in 1..20, not %s", d)
	}
	return nil
}

// QueueARN reads the ARN of the queue at url.
func QueueARN(ctx context.Context, client *sqs.Client, url string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("read the ARN of queue %s: %w", url, err)
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("queue %s has no ARN", url)
	}
	return arn, nil
}

func (p *SQSPoller) log() *slog.Logger {
	if p.Log == nil {
		return slog.Default()
	}
	return p.Log
}

// maxReceiveBackoff caps the wait between failed receives: short, so that
// a poller is back within seconds of a restarted fauxqs.
const maxReceiveBackoff = 5 * time.Second

// poll is one poller: receive a batch, invoke, delete; until ctx ends. While
// receives fail (fauxqs down or restarting) it retries with backoff, logging
// the first failure and the recovery.
func (p *SQSPoller) poll(ctx context.Context) {
	backoff := time.Second
	var failingSince time.Time
	for ctx.Err() == nil {
		msgs, err := p.receiveBatch(ctx)
		log := p.log().With("function", p.Function, "event", p.Event.Name, "queue", p.QueueURL)
		switch {
		case err != nil && ctx.Err() == nil:
			if failingSince.IsZero() {
				failingSince = time.Now()
				log.Warn("receive failed; retrying with backoff", "error", err.Error(), "retry_in", backoff)
			} else {
				log.Debug("receive failed again", "error", err.Error(), "retry_in", backoff)
			}
			sleep(ctx, backoff)
			backoff = min(2*backoff, maxReceiveBackoff)
		case err == nil:
			if !failingSince.IsZero() {
				log.Warn("receiving again", "failed_for", time.Since(failingSince).Round(time.Millisecond))
				failingSince = time.Time{}
			}
			backoff = time.Second
		}
		if len(msgs) > 0 {
			// Even when ctx ended while the batch was gathered: the
			// messages are received and would otherwise hide until their
			// visibility timeout.
			p.handle(ctx, msgs)
		}
	}
}

// receiveBatch receives one batch: a first long poll, then, within the
// batching window, more until the batch is full. Messages gathered before
// an error are returned with it.
func (p *SQSPoller) receiveBatch(ctx context.Context) ([]types.Message, error) {
	wait := p.PollWait
	if wait == 0 {
		wait = DefaultPollWait
	}
	msgs, err := p.receive(ctx, p.Event.BatchSize, wait)
	if err != nil || len(msgs) == 0 || p.Event.MaximumBatchingWindow <= 0 {
		return msgs, err
	}
	end := time.Now().Add(p.Event.MaximumBatchingWindow)
	for len(msgs) < p.Event.BatchSize {
		left := time.Until(end)
		if left <= 0 {
			break
		}
		more, err := p.receive(ctx, p.Event.BatchSize-len(msgs), min(left, 20*time.Second))
		msgs = append(msgs, more...)
		if err != nil {
			return msgs, err
		}
	}
	return msgs, nil
}

// receive is one ReceiveMessage of up to n (at most 10) messages with every
// system and message attribute.
func (p *SQSPoller) receive(ctx context.Context, n int, wait time.Duration) ([]types.Message, error) {
	out, err := p.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(p.QueueURL),
		MaxNumberOfMessages: int32(min(n, 10)),
		WaitTimeSeconds:     int32(math.Ceil(wait.Seconds())),
		// All: ApproximateReceiveCount, SentTimestamp, SenderId,
		// ApproximateFirstReceiveTimestamp (and the FIFO ones), which Lambda
		// puts in each record's attributes. (The older AttributeNames is
		// deprecated; fauxqs and SQS read this one.)
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// handle invokes the function with one batch and deletes what Lambda would.
func (p *SQSPoller) handle(ctx context.Context, msgs []types.Message) {
	ev := p.event(msgs)
	ids := messageIDs(msgs)
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	region := arnRegion(p.QueueARN)
	log := p.log().With("function", p.Function, "event", p.Event.Name)
	resp, inv, err := invoke(ctx, p.Function, region, timeout, func(ctx context.Context) (events.SQSEventResponse, error) {
		return p.Handler(ctx, ev)
	})
	switch {
	case errors.Is(err, ErrAbandoned):
		log.Error("invocation abandoned at the function's timeout; the batch will be received again", "request_id", inv.RequestID, "message_ids", ids, "timeout", timeout)
		return
	case err != nil:
		log.Error("invocation failed; the batch will be received again", "request_id", inv.RequestID, "message_ids", ids, "error", err.Error())
		return
	}
	del := msgs
	if p.Event.ReportsBatchItemFailures() && len(resp.BatchItemFailures) > 0 {
		inBatch := map[string]bool{}
		for _, id := range ids {
			inBatch[id] = true
		}
		failed := map[string]bool{}
		var failedIDs []string
		for _, f := range resp.BatchItemFailures {
			if !inBatch[f.ItemIdentifier] {
				log.Error("batchItemFailures names a message not in the batch; the whole batch failed, as in Lambda", "request_id", inv.RequestID, "message_ids", ids, "item_identifier", f.ItemIdentifier)
				return
			}
			if !failed[f.ItemIdentifier] {
				failed[f.ItemIdentifier] = true
				failedIDs = append(failedIDs, f.ItemIdentifier)
			}
		}
		log.Warn("batch items failed; they will be received again", "request_id", inv.RequestID, "message_ids", failedIDs)
		del = nil
		for _, m := range msgs {
			if !failed[aws.ToString(m.MessageId)] {
				del = append(del, m)
			}
		}
	}
	p.delete(ctx, del)
}

// delete removes handled messages from the queue, even when the runner is
// stopping: the invocation succeeded.
func (p *SQSPoller) delete(ctx context.Context, msgs []types.Message) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for len(msgs) > 0 {
		chunk := msgs[:min(10, len(msgs))]
		msgs = msgs[len(chunk):]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := p.Client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.QueueURL), Entries: entries})
		if err != nil {
			p.log().Error("delete failed; the messages will be received again", "function", p.Function, "event", p.Event.Name, "message_ids", messageIDs(chunk), "error", err.Error())
			continue
		}
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			p.log().Error("delete failed; the message will be received again", "function", p.Function, "event", p.Event.Name, "message_id", aws.ToString(chunk[i].MessageId), "error", aws.ToString(f.Message))
		}
	}
}

// event builds the SQS event Lambda would send for msgs.
func (p *SQSPoller) event(msgs []types.Message) events.SQSEvent {
	region := arnRegion(p.QueueARN)
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, m := range msgs {
		attrs := make(map[string]string, len(m.Attributes))
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		mattrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			mattrs[k] = events.SQSMessageAttribute{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: v.StringListValues,
				BinaryListValues: v.BinaryListValues,
				DataType:         aws.ToString(v.DataType),
			}
		}
		ev.Records[i] = events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             attrs,
			MessageAttributes:      mattrs,
			EventSource:            "aws:sqs",
			EventSourceARN:         p.QueueARN,
			AWSRegion:              region,
		}
	}
	return ev
}

func messageIDs(msgs []types.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = aws.ToString(m.MessageId)
	}
	return out
}
