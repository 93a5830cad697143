// Package queue is the SQS adapter: the only code that sends to or sets up
// the jobs queue.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"genjobs/internal/job"
	"genjobs/internal/provider/steps"
)

// Message is the body of a jobs-queue message: only the id, so the worker
// always reads the job's current state from the table.
type Message struct {
	JobID string `json:"job_id"`
}

// JobSender sends job ids to the queue that runs them: the one place that
// decides where a job's message goes. A job of an endpoint routed to a
// model provider (job.Job.Provider) goes to the provider queue; any other
// to the jobs queue of its lane (job.Job.Lane, decided at creation by
// lifecycle.QueueFor), the default queue when its lane has none here.
type JobSender struct {
	sqs         *sqs.Client
	url         string
	lanes       map[string]string
	providerURL string
}

// NewJobSender returns a sender to the default queue at url (the heavy
// worker's, which runs any engine job). It does no I/O.
func NewJobSender(client *sqs.Client, url string) *JobSender {
	return &JobSender{sqs: client, url: url, lanes: map[string]string{}}
}

// WithLane sends the jobs of lane to the queue at url; an empty url leaves
// them on the default queue.
func (q *JobSender) WithLane(lane, url string) *JobSender {
	if url != "" {
		q.lanes[lane] = url
	}
	return q
}

// WithProviders sends routed jobs to the provider queue at url.
func (q *JobSender) WithProviders(url string) *JobSender {
	q.providerURL = url
	return q
}

// ErrNoProviderQueue: a routed job's message has nowhere to go.
var ErrNoProviderQueue = errors.New("no provider queue is configured (PROVIDER_QUEUE_URL)")

// Enqueue sends the job's message to the queue that runs it: a routed
// job's step (its submission while queued, else its next check) to the
// provider queue, any other job's id to the jobs queue of its lane.
func (q *JobSender) Enqueue(ctx context.Context, j *job.Job) error {
	if j.Provider != "" {
		return q.sendStep(ctx, steps.Resend(j))
	}
	url := q.url
	if u, ok := q.lanes[j.Lane]; ok {
		url = u
	}
	return q.send(ctx, url, j.ID, Message{JobID: j.ID})
}

// CancelPrediction hands the cancellation of an ended routed job's
// prediction to the provider queue.
func (q *JobSender) CancelPrediction(ctx context.Context, j *job.Job) error {
	return q.sendStep(ctx, steps.Message{Kind: steps.Cancel, JobID: j.ID})
}

func (q *JobSender) sendStep(ctx context.Context, m steps.Message) error {
	if q.providerURL == "" {
		return fmt.Errorf("enqueue job %s: %w", m.JobID, ErrNoProviderQueue)
	}
	return q.send(ctx, q.providerURL, m.JobID, m)
}

func (q *JobSender) send(ctx context.Context, url, jobID string, m any) error {
	if err := Send(ctx, q.sqs, url, m, 0); err != nil {
		return fmt.Errorf("enqueue job %s: %w", jobID, err)
	}
	return nil
}

// MaxDelay is the longest SQS keeps a message invisible on sending. A wait
// longer than that travels as a chain of such hops: a webhook retry hours
// away (the deliverer sends an early message on until its attempt is due),
// a provider's next poll.
const MaxDelay = 15 * time.Minute

// Send sends m, as JSON, to the queue at url, visible after delay (at most
// MaxDelay; whole seconds, rounded up; 0: at once). Every message of the
// service's queues goes through it.
func Send(ctx context.Context, client *sqs.Client, url string, m any, delay time.Duration) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(url),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: int32(math.Ceil(min(max(delay, 0), MaxDelay).Seconds())),
	})
	return err
}

// Redeliverer shortens the wait of a received message: Lambda leaves a
// failed message invisible for the queue's whole visibility timeout, far
// longer than a retry needs to wait.
type Redeliverer struct {
	sqs  *sqs.Client
	urls map[string]string // by queue name
}

// NewRedeliverer returns a redeliverer of messages of the queues at urls
// (those that invoke the function). It does no I/O.
func NewRedeliverer(client *sqs.Client, urls ...string) *Redeliverer {
	r := &Redeliverer{sqs: client, urls: map[string]string{}}
	for _, u := range urls {
		if u != "" {
			r.urls[u[strings.LastIndex(u, "/")+1:]] = u
		}
	}
	return r
}

// ErrUnknownQueue: a message's queue is none of the redeliverer's.
var ErrUnknownQueue = errors.New("the message's queue is not one this function reads")

// Redeliver makes the message received from the queue queueARN (an event
// record's eventSourceARN) visible again after the wait.
func (r *Redeliverer) Redeliver(ctx context.Context, queueARN, receiptHandle string, after time.Duration) error {
	url, ok := r.urls[queueARN[strings.LastIndex(queueARN, ":")+1:]]
	if !ok {
		return fmt.Errorf("redeliver a message of %s: %w", queueARN, ErrUnknownQueue)
	}
	_, err := r.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: aws.String(receiptHandle),
		VisibilityTimeout: int32(after.Round(time.Second) / time.Second),
	})
	if err != nil {
		return fmt.Errorf("redeliver a message of %s: %w", queueARN, err)
	}
	return nil
}

// Settings of the jobs queue, as template.yaml sets them (docs/architecture.md, "The resources"):
// a visibility timeout of six worker timeouts, and the DLQ after 10
// receives, so that throttled invocations (each counts as a receive) do not
// park a job a worker could still run.
const (
	VisibilityTimeoutSeconds = 720
	MaxReceiveCount          = 10
)

// Create makes the jobs queue named name and its dead-letter queue
// name+"-dlq", unless they exist, and returns both URLs. The local stack and
// tests use it; in AWS the template creates them.
func Create(ctx context.Context, client *sqs.Client, name string) (url, dlqURL string, err error) {
	return create(ctx, client, name, VisibilityTimeoutSeconds, MaxReceiveCount)
}

// CreateWithDLQ makes the queue named name, with the visibility timeout
// and the dead-letter queue name+"-dlq" after maxReceives receives, unless
// they exist, and returns both URLs.
func CreateWithDLQ(ctx context.Context, client *sqs.Client, name string, visibility, maxReceives int) (url, dlqURL string, err error) {
	return create(ctx, client, name, visibility, maxReceives)
}

func create(ctx context.Context, client *sqs.Client, name string, visibility, maxReceives int) (url, dlqURL string, err error) {
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s-dlq: %w", name, err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", fmt.Errorf("read queue %s-dlq: %w", name, err)
	}
	redrive, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": attrs.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(maxReceives),
	})
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			string(types.QueueAttributeNameVisibilityTimeout): strconv.Itoa(visibility),
			string(types.QueueAttributeNameRedrivePolicy):     string(redrive),
		},
	})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(q.QueueUrl), aws.ToString(dlq.QueueUrl), nil
}

// DeadLetters reads the jobs queue's dead-letter queue: messages whose job
// failed MaxReceiveCount attempts.
type DeadLetters struct {
	sqs *sqs.Client
	url string
}

// NewDeadLetters returns a reader of the DLQ at url. It does no I/O.
func NewDeadLetters(client *sqs.Client, url string) *DeadLetters {
	return &DeadLetters{sqs: client, url: url}
}

// Drain hands each dead message's job id to fn, at most max messages, and
// deletes a message once fn has returned nil for it (an unreadable message
// is deleted at once). It returns how many messages it deleted.
func (d *DeadLetters) Drain(ctx context.Context, max int, fn func(jobID string) error) (int, error) {
	n := 0
	for n < max {
		out, err := d.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(d.url),
			MaxNumberOfMessages: int32(min(10, max-n)),
			VisibilityTimeout:   60,
		})
		if err != nil {
			return n, fmt.Errorf("read the dead-letter queue: %w", err)
		}
		if len(out.Messages) == 0 {
			return n, nil
		}
		for _, m := range out.Messages {
			var msg Message
			if json.Unmarshal([]byte(aws.ToString(m.Body)), &msg) == nil && msg.JobID != "" {
				if err := fn(msg.JobID); err != nil {
					return n, err
				}
			}
			if _, err := d.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(d.url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return n, fmt.Errorf("delete a dead letter: %w", err)
			}
			n++
		}
	}
	return n, nil
}

// DeadLetterQueues drains several dead-letter queues as one (the heavy and
// the light jobs queues' DLQs), each in turn, max messages in all.
type DeadLetterQueues []*DeadLetters

// Drain drains each queue in turn until max messages are deleted.
func (qs DeadLetterQueues) Drain(ctx context.Context, max int, fn func(jobID string) error) (int, error) {
	total := 0
	for _, q := range qs {
		if q == nil || q.url == "" {
			continue
		}
		n, err := q.Drain(ctx, max-total, fn)
		total += n
		if err != nil || total >= max {
			return total, err
		}
	}
	return total, nil
}
