package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"genjobs/internal/auth"
	"genjobs/internal/emulator"
	"genjobs/internal/job"
	"genjobs/internal/queue"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/webhook"
)

// webhookRedeliver sends a job's webhook now instead of after its retry
// wait: the delivery's next attempt is made due at once (one more attempt
// for a delivery that failed), then its deliveries message is sent without
// delay. The deliverer treats it as any message of a due attempt, so the
// message that was already waiting finds the attempt made and sends
// nothing twice.
func (c *cli) webhookRedeliver(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	jobID := fs.String("job", "", "the job's `id`, as POST /generate answered it (required)")
	if err := c.parseIDs(fs, args, stdout, "job"); err != nil {
		return err
	}
	if !job.ValidID(*jobID) {
		return usagef("%s: --job %q is not a job id (36 characters, such as 0195c2a1-...)", c.cmd.name, *jobID)
	}
	if c.g.aws && c.g.stack == "" {
		return usagef("%s: with --aws, give --stack NAME: the stack names the deliveries queue", c.cmd.name)
	}
	st, err := c.store(ctx)
	if err != nil {
		return err
	}
	s := deliveriesdb.New(st)
	j, err := s.Job(ctx, *jobID)
	if errors.Is(err, job.ErrNotFound) {
		return fmt.Errorf("job %s not found", *jobID)
	}
	if err != nil {
		return c.target.explain(err)
	}
	d, err := s.Delivery(ctx, j.ID)
	if errors.Is(err, webhook.ErrNotFound) {
		return noDelivery(j)
	}
	if err != nil {
		return c.target.explain(err)
	}
	if d.State == webhook.Succeeded {
		return delivered(d)
	}
	// Found before writing: a queue that cannot be reached refuses here,
	// with nothing changed.
	q, err := c.deliveries(ctx)
	if err != nil {
		return err
	}
	d, n, err := webhook.SendAgain(ctx, s, q, j.ID, auth.NewID("rdl_"), c.clock.Now())
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return noDelivery(j)
	case errors.Is(err, webhook.ErrDelivered):
		return fmt.Errorf("job %s's webhook was delivered meanwhile; nothing to send", j.ID)
	case errors.Is(err, webhook.ErrClaimed):
		return fmt.Errorf("an attempt of job %s's webhook is being made right now; run the command again in a minute if it fails", j.ID)
	case errors.Is(err, webhook.ErrNotSent):
		return fmt.Errorf("job %s's webhook is due now (attempt %d), but its message was not sent (%v); the sweeper sends it within 3 minutes", j.ID, n, strings.TrimPrefix(err.Error(), webhook.ErrNotSent.Error()+": "))
	case err != nil:
		return c.target.explain(err)
	}
	// The host alone: a webhook URL's path or query may carry the
	// receiver's secret.
	host := "(unreadable URL)"
	if u, err := url.Parse(d.URL); err == nil && u.Host != "" {
		host = u.Host
	}
	return writeJSON(stdout, struct {
		JobID     string `json:"job_id"`
		WebhookID string `json:"webhook_id"`
		Attempt   int    `json:"attempt"`
		Host      string `json:"host"`
		Was       string `json:"was"`
	}{j.ID, d.ID, n, host, string(d.State)})
}

// noDelivery says why a job has no delivery to send again.
func noDelivery(j *job.Job) error {
	switch {
	case j.WebhookURL == "":
		return fmt.Errorf("job %s has no webhook delivery: it was created without X-Webhook-URL", j.ID)
	case !j.Status.Terminal():
		return fmt.Errorf("job %s has no webhook delivery yet: it is %s, and its webhook is sent when it ends", j.ID, j.Status)
	}
	return fmt.Errorf("job %s has no webhook delivery yet: it ended, and the notifier starts the delivery from the table's stream", j.ID)
}

func delivered(d *webhook.Delivery) error {
	if n := len(d.Attempts); n > 0 {
		return fmt.Errorf("job %s's webhook was already delivered (attempt %d answered %d); nothing to send", d.JobID, n, d.Attempts[n-1].StatusCode)
	}
	return fmt.Errorf("job %s's webhook was already delivered; nothing to send", d.JobID)
}

// deliveries returns the deliveries queue of the command's target, finding
// it unless a test set one: locally the queue <table>-deliveries on the
// fauxqs make run started; in AWS the stack's DeliveriesQueue.
func (c *cli) deliveries(ctx context.Context) (*queue.Deliveries, error) {
	if c.target.sqs == nil {
		var err error
		if c.g.aws {
			c.target.sqs, c.target.deliveriesURL, err = stackDeliveries(ctx, c.g.stack)
		} else {
			c.target.sqs, c.target.deliveriesURL, err = localDeliveries(ctx, c.target.table, c.getenv, c.repoRoot)
		}
		if err != nil {
			return nil, err
		}
	}
	return queue.NewDeliveries(c.target.sqs, c.target.deliveriesURL, ""), nil
}

// localDeliveries finds fauxqs as resolveLocal finds DynamoDB Local: at
// 127.0.0.1:$FAUXQS_PORT when set, else where make run recorded it, else
// at its default port. make run names its queues after the table.
func localDeliveries(ctx context.Context, table string, getenv func(string) string, repoRoot func() (string, error)) (*sqs.Client, string, error) {
	addr := "127.0.0.1:4566"
	if v := getenv("FAUXQS_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return nil, "", usagef("FAUXQS_PORT must be a port number, not %q", v)
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	} else if st, err := findStack(repoRoot); err == nil && st.Fauxqs != "" {
		addr = strings.TrimPrefix(st.Fauxqs, "http://")
	}
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, "", fmt.Errorf("fauxqs (the local SQS) is not running on %s; start the stack with make run", addr)
	}
	conn.Close()
	client := emulator.SQSClient("http://" + addr)
	name := table + "-deliveries"
	out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	var missing *sqstypes.QueueDoesNotExist
	if errors.As(err, &missing) {
		return nil, "", fmt.Errorf("queue %s does not exist on fauxqs at %s; make run creates it", name, addr)
	}
	if err != nil {
		return nil, "", fmt.Errorf("find queue %s on fauxqs at %s: %w", name, addr, err)
	}
	return client, aws.ToString(out.QueueUrl), nil
}

// stackDeliveries reads the URL of a deployed stack's DeliveriesQueue (an
// SQS queue's physical id is its URL).
func stackDeliveries(ctx context.Context, stack string) (*sqs.Client, string, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("load the AWS configuration: %w", err)
	}
	out, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(stack), LogicalResourceId: aws.String("DeliveriesQueue"),
	})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationError" {
		return nil, "", fmt.Errorf("stack %s has no DeliveriesQueue in AWS (%s): %s", stack, cfg.Region, api.ErrorMessage())
	}
	if err != nil {
		return nil, "", fmt.Errorf("find the deliveries queue of stack %s: %w", stack, err)
	}
	queueURL := ""
	if r := out.StackResourceDetail; r != nil {
		queueURL = aws.ToString(r.PhysicalResourceId)
	}
	if queueURL == "" {
		return nil, "", fmt.Errorf("stack %s's DeliveriesQueue has no URL yet (is the stack fully deployed?)", stack)
	}
	return sqs.NewFromConfig(cfg), queueURL, nil
}
