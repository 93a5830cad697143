// Package sqswire builds the adapters on an SQS client that the function
// builders share: constructors only. It links the SQS client, and the
// DynamoDB one through dynamodbwire, not the S3 one.
package sqswire

import (
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/auth"
	"genjobs/internal/blob/s3url"
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

// JobsAPI is what the job routes' handlers are built on: the generate
// function's, the jobs function's, and the MCP function's, which calls
// both. Build one per function and share it between its handlers.
type JobsAPI struct {
	Store   *store.Store       // the table adapter (dynamodbwire.API)
	Auth    auth.Authenticator // API tokens, resolved from Store
	Queue   *queue.JobSender   // a job's message, to the queue that runs it
	Results s3url.ResultLinks  // the results' links, minted without the S3 client
}

// NewJobsAPI builds a JobsAPI, checking the settings it needs.
func NewJobsAPI(d app.Deps) (JobsAPI, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "JOBS_QUEUE_URL": d.Queues.Jobs, "RESULTS_BUCKET": d.Buckets.Results,
	}); err != nil {
		return JobsAPI{}, err
	}
	st, a := dynamodbwire.API(d)
	return JobsAPI{Store: st, Auth: a, Queue: JobQueue(d, Client(d)), Results: d.ResultLinks()}, nil
}
