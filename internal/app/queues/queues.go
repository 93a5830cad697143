// Package queues wires the SQS adapter, and the functions that use it with
// the table alone: the notifier and the sweeper. It links the SQS client
// and not the S3 one.
package queues

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/app"
	"genjobs/internal/app/tables"
	"genjobs/internal/awsclient"
	"genjobs/internal/fault"
	"genjobs/internal/lifecycle"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/sweeper"
	"genjobs/internal/webhook"
)

// Client is an SQS client that follows d's profile: build it once per
// function and share it.
func Client(d app.Deps) *sqs.Client { return queue.NewClient(d.AWS, d.Retries.SQS) }

// JobQueue sends a job's message to the queue that runs it: the provider
// queue for a routed job, else the queue of its lane (lifecycle.QueueFor).
func JobQueue(d app.Deps, c *sqs.Client) *queue.JobSender {
	return queue.NewJobSender(c, d.JobsQueueURL).
		WithLane(lifecycle.LaneLight, d.LightJobsQueueURL).
		WithProviders(d.ProviderQueueURL)
}

// Lifecycle ends jobs in st and promotes backlogs through jobs.
func Lifecycle(d app.Deps, st *store.Store, jobs *queue.JobSender) *lifecycle.Ender {
	return &lifecycle.Ender{Store: st, Queue: jobs, Clock: d.Clock, Log: d.Log, Metrics: d.Metrics}
}

// Notifier builds the handler of the table's stream: it starts the webhook
// delivery of each job that ended with one.
func Notifier(d app.Deps) (app.StreamHandler, error) {
	err := app.Require(map[string]string{"TABLE_NAME": d.Table, "DELIVERIES_QUEUE_URL": d.DeliveriesQueueURL, "DELIVERIES_DLQ_URL": d.DeliveriesDLQURL})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Events)
	n := &webhook.Notifier{
		Store: tables.Store(d), Queue: queue.NewDeliveries(Client(d), d.DeliveriesQueueURL, d.DeliveriesDLQURL),
		Clock: d.Clock, Log: d.Log,
	}
	return app.WithMargin(n.HandleStream), nil
}

// Sweeper builds the sweeper function's handler of its schedule.
func Sweeper(d app.Deps) (app.ScheduleHandler, error) {
	err := app.Require(map[string]string{"TABLE_NAME": d.Table, "JOBS_QUEUE_URL": d.JobsQueueURL, "JOBS_DLQ_URL": d.JobsDLQURL})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Events)
	st, c := tables.Store(d), Client(d)
	q := JobQueue(d, c)
	s := &sweeper.Sweeper{
		Store:     st,
		Lifecycle: Lifecycle(d, st, q),
		Queue:     q,
		Dead: queue.DeadLetterQueues{queue.NewDeadLetters(c, d.JobsDLQURL),
			queue.NewDeadLetters(c, d.LightJobsDLQURL)},
		Clock:        d.Clock,
		Log:          d.Log,
		Deadline:     sweeper.DefaultDeadline,
		RequeueAfter: sweeper.DefaultRequeueAfter,
		Lease:        st,
		LeaseFor:     sweeper.DefaultLeaseFor,
	}
	if d.DeliveriesQueueURL != "" { // re-sends overdue webhook attempts too
		s.Deliveries = st
		s.DeliveryQueue = queue.NewDeliveries(c, d.DeliveriesQueueURL, d.DeliveriesDLQURL)
	}
	if d.RequeueAfter > 0 {
		s.RequeueAfter = d.RequeueAfter
	}
	return func(ctx context.Context, e events.EventBridgeEvent) error {
		ctx, cancel := fault.Reserve(ctx, app.EventMargin)
		defer cancel()
		return s.Handle(ctx, e)
	}, nil
}
