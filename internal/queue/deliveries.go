package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/webhook"
)

// Deliveries carries webhook attempts (webhook.Queue): one message per due
// attempt, and the dead-letter queue where failed deliveries are parked.
type Deliveries struct {
	sqs         *sqs.Client
	url, dlqURL string
}

// NewDeliveries returns the adapter of the deliveries queue at url and its
// dead-letter queue at dlqURL. It does no I/O.
func NewDeliveries(client *sqs.Client, url, dlqURL string) *Deliveries {
	return &Deliveries{sqs: client, url: url, dlqURL: dlqURL}
}

// Schedule sends the message of attempt n of a job's delivery, visible after
// delay (at most MaxDelay; whole seconds, rounded up).
func (q *Deliveries) Schedule(ctx context.Context, jobID string, attempt int, delay time.Duration) error {
	if err := Send(ctx, q.sqs, q.url, webhook.Message{JobID: jobID, Attempt: attempt}, delay); err != nil {
		return fmt.Errorf("schedule attempt %d of job %s's webhook: %w", attempt, jobID, err)
	}
	return nil
}

// parked is a failed delivery as an operator finds it on the dead-letter queue.
type parked struct {
	JobID     string            `json:"job_id"`
	WebhookID string            `json:"webhook_id"`
	URL       string            `json:"url"`
	Attempts  []webhook.Attempt `json:"attempts"`
}

// Park puts a failed delivery on the dead-letter queue.
func (q *Deliveries) Park(ctx context.Context, d *webhook.Delivery) error {
	if err := Send(ctx, q.sqs, q.dlqURL, parked{JobID: d.JobID, WebhookID: d.ID, URL: d.URL, Attempts: d.Attempts}, 0); err != nil {
		return fmt.Errorf("park job %s's webhook: %w", d.JobID, err)
	}
	return nil
}

// Settings of the deliveries queue, as template.yaml sets them: a visibility
// timeout of six deliverer timeouts (30 s), above the claim of an attempt,
// and the dead-letter queue after 10 receives of a message nobody could
// handle (throttled invocations count as receives).
const (
	DeliveriesVisibilityTimeoutSeconds = 180
	DeliveriesMaxReceiveCount          = 10
)

// CreateDeliveries makes the deliveries queue named name and its
// dead-letter queue name+"-dlq", unless they exist, and returns both URLs.
func CreateDeliveries(ctx context.Context, client *sqs.Client, name string) (url, dlqURL string, err error) {
	return create(ctx, client, name, DeliveriesVisibilityTimeoutSeconds, DeliveriesMaxReceiveCount)
}
