// Package providerqueue is the adapter of the provider queue, which carries
// the steps of routed jobs. It stands apart from package queue, which every
// function that enqueues jobs links, because it speaks the provider
// package's messages.
package providerqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/provider"
	"genjobs/internal/queue"
)

// Queue carries the steps of routed jobs (provider.Queue): a job's
// next step is a message made visible when it is due, at most queue.MaxDelay
// ahead; a step due later is reached by a chain of such messages.
type Queue struct {
	sqs *sqs.Client
	url string
}

// New returns the adapter of the provider queue at url. It does no I/O.
func New(client *sqs.Client, url string) *Queue {
	return &Queue{sqs: client, url: url}
}

// Schedule sends m, visible after delay (at most queue.MaxDelay; whole seconds,
// rounded up).
func (q *Queue) Schedule(ctx context.Context, m provider.Message, delay time.Duration) error {
	if err := queue.Send(ctx, q.sqs, q.url, m, delay); err != nil {
		return fmt.Errorf("schedule the next step of job %s: %w", m.JobID, err)
	}
	return nil
}

// Settings of the provider queue, as template.yaml sets them: a visibility
// timeout six times the provider function's (as Lambda advises for SQS
// sources), and the dead-letter queue after 5 receives of a message no step
// could handle.
const (
	VisibilityTimeoutSeconds = 3600
	MaxReceiveCount          = 5
)

// Create makes the provider queue named name and its dead-letter queue
// name+"-dlq", unless they exist, and returns both URLs.
func Create(ctx context.Context, client *sqs.Client, name string) (url, dlqURL string, err error) {
	return queue.CreateWithDLQ(ctx, client, name, VisibilityTimeoutSeconds, MaxReceiveCount)
}
