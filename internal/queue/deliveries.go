package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/webhook"
)

// MaxDelay is the longest SQS keeps a message invisible on sending. A webhook
// retry hours away travels as a chain of such hops: the deliverer sends an
// early message on until its attempt is due.
const MaxDelay = 15 * time.Minute

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
	body, _ := json.Marshal(webhook.Message{JobID: jobID, Attempt: attempt})
	seconds := int32(math.Ceil(min(max(delay, 0), MaxDelay).Seconds()))
	_, err := q.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(q.url),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: seconds,
	})
	if err != nil {
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
	body, _ := json.Marshal(parked{JobID: d.JobID, WebhookID: d.ID, URL: d.URL, Attempts: d.Attempts})
	_, err := q.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.dlqURL), MessageBody: aws.String(string(body))})
	if err != nil {
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
