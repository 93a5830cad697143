package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/provider"
)

// Providers carries the steps of routed jobs (provider.Queue): a job's
// next step is a message made visible when it is due, at most MaxDelay
// ahead; a step due later is reached by a chain of such messages.
type Providers struct {
	sqs *sqs.Client
	url string
}

// NewProviders returns the adapter of the provider queue at url. It does
// no I/O.
func NewProviders(client *sqs.Client, url string) *Providers {
	return &Providers{sqs: client, url: url}
}

// Schedule sends m, visible after delay (at most MaxDelay; whole seconds,
// rounded up).
func (q *Providers) Schedule(ctx context.Context, m provider.Message, delay time.Duration) error {
	body, _ := json.Marshal(m)
	seconds := int32(math.Ceil(min(max(delay, 0), MaxDelay).Seconds()))
	_, err := q.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(q.url),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: seconds,
	})
	if err != nil {
		return fmt.Errorf("schedule the next step of job %s: %w", m.JobID, err)
	}
	return nil
}

// Settings of the provider queue, as template.yaml sets them: a visibility
// timeout above the provider function's timeout, and the dead-letter
// queue after 5 receives of a message no step could handle.
const (
	ProvidersVisibilityTimeoutSeconds = 900
	ProvidersMaxReceiveCount          = 5
)

// CreateProviders makes the provider queue named name and its dead-letter
// queue name+"-dlq", unless they exist, and returns both URLs.
func CreateProviders(ctx context.Context, client *sqs.Client, name string) (url, dlqURL string, err error) {
	return create(ctx, client, name, ProvidersVisibilityTimeoutSeconds, ProvidersMaxReceiveCount)
}
