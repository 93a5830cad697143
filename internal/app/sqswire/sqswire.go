// Package sqswire builds the adapters on an SQS client that the function
// builders share: constructors only. It links the SQS client and not the S3
// one.
package sqswire

import (
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/app"
	"genjobs/internal/lifecycle"
	"genjobs/internal/queue"
	"genjobs/internal/store"
)

// Client is an SQS client that follows d's profile: build it once per
// function and share it.
func Client(d app.Deps) *sqs.Client { return queue.NewClient(d.AWS, d.Retries.SQS) }

// JobQueue sends a job's message to the queue that runs it: the provider
// queue for a routed job, else the queue of its lane (lifecycle.QueueFor).
func JobQueue(d app.Deps, c *sqs.Client) *queue.JobSender {
	return queue.NewJobSender(c, d.Queues.Jobs).
		WithLane(lifecycle.LaneLight, d.Queues.LightJobs).
		WithProviders(d.Providers.Queue)
}

// Lifecycle ends jobs in st and promotes backlogs through jobs.
func Lifecycle(d app.Deps, st *store.Store, jobs *queue.JobSender) *lifecycle.Ender {
	return &lifecycle.Ender{Store: st, Queue: jobs, Clock: d.Clock, Log: d.Log, Metrics: d.Metrics}
}
