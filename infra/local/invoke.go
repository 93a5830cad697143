package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/endpoints"
	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/app"
	"genjobs/internal/emulator"
	"genjobs/internal/job"
	"genjobs/internal/store"
)

// invoke runs one function's handler on one event file against the running
// local stack, like `sam local invoke`, and prints the handler's response.
// In the event, {{TOKEN}} becomes the demo token and {{JOB_ID}} the JOB_ID
// variable or else the demo workspace's newest job.
func invoke(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: invoke FUNCTION EVENT_FILE (FUNCTION: a directory under functions/, e.g. generate or worker, or a logical id)")
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	id, ok := logicalID(tpl, args[0])
	if !ok {
		return fmt.Errorf("no function %q in template.yaml", args[0])
	}
	raw, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	// The running stack, wherever make run started it.
	st, err := endpoints.Find(endpoints.StateDir(root))
	if err != nil {
		return err
	}
	ctx := context.Background()
	db := emulator.DynamoDBClient(st.DynamoDB)
	q := emulator.SQSClient(st.Fauxqs)
	local := devstack.New(db, q, emulator.S3Client(st.Fauxqs), st.API)
	local.UseMoto(st.Moto)
	local.Pool.PoolID, local.Pool.ClientID, local.StripeAPIBase = st.UserPool, st.UserPoolClient, st.Stripe
	for _, name := range []struct {
		url   *string
		queue string
	}{
		{&local.JobsQueueURL, local.JobsQueue}, {&local.JobsDLQURL, local.JobsQueue + "-dlq"},
		{&local.DeliveriesQueueURL, local.DeliveriesQueue}, {&local.DeliveriesDLQURL, local.DeliveriesQueue + "-dlq"},
	} {
		qu, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name.queue)})
		if err != nil {
			return fmt.Errorf("the local stack is not running (start it with make run): %w", err)
		}
		*name.url = aws.ToString(qu.QueueUrl)
	}
	// The template's other queues (a stream mapping's destination), as
	// make run made them.
	if err := local.ProvisionQueues(ctx, tpl); err != nil {
		return err
	}

	text := string(raw)
	if strings.Contains(text, "{{TOKEN}}") {
		token, err := os.ReadFile(st.DemoToken)
		if err != nil {
			return fmt.Errorf("no demo token yet (start the stack with make run): %w", err)
		}
		text = strings.ReplaceAll(text, "{{TOKEN}}", strings.TrimSpace(string(token)))
	}
	if strings.Contains(text, "{{JOB_ID}}") {
		jobID := os.Getenv("JOB_ID")
		if jobID == "" {
			page, err := store.New(db, devstack.Table).ListJobs(ctx, devstack.DemoWorkspace, job.Query{Limit: 1})
			if err != nil {
				return err
			}
			if len(page.Jobs) == 0 {
				return errors.New("the demo workspace has no job yet: invoke a generate event first, or set JOB_ID")
			}
			jobID = page.Jobs[0].ID
		}
		text = strings.ReplaceAll(text, "{{JOB_ID}}", jobID)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	h, err := local.Function(tpl, id, log)
	if err != nil {
		return err
	}
	// The handler sees the deadline of the function's Timeout, as in Lambda.
	for _, f := range tpl.Functions() {
		if f.LogicalID == id {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, triggers.FunctionTimeout(f))
			defer cancel()
		}
	}
	var resp any
	switch {
	case h.HTTP != nil:
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal([]byte(text), &ev); err != nil {
			return fmt.Errorf("%s is not an API Gateway v2 event: %w", args[1], err)
		}
		resp, err = h.HTTP(ctx, ev)
	case h.SQS != nil:
		var ev events.SQSEvent
		if err := json.Unmarshal([]byte(text), &ev); err != nil {
			return fmt.Errorf("%s is not an SQS event: %w", args[1], err)
		}
		resp, err = h.SQS(ctx, ev)
	case h.Stream != nil:
		var ev events.DynamoDBEvent
		if err := json.Unmarshal([]byte(text), &ev); err != nil {
			return fmt.Errorf("%s is not a DynamoDB stream event: %w", args[1], err)
		}
		resp, err = h.Stream(ctx, ev)
	case h.Schedule != nil:
		var ev events.EventBridgeEvent
		if err := json.Unmarshal([]byte(text), &ev); err != nil {
			return fmt.Errorf("%s is not an EventBridge event: %w", args[1], err)
		}
		err = h.Schedule(ctx, ev)
		resp = map[string]string{"result": "ok"}
	}
	if err != nil {
		return fmt.Errorf("%s returned a Lambda error: %w", id, err)
	}
	return printJSON(os.Stdout, resp)
}

// logicalID accepts "generate" for GenerateFunction, or the logical id itself.
func logicalID(tpl *sam.Template, name string) (string, bool) {
	for _, f := range tpl.Functions() {
		if f.LogicalID == name || app.FunctionName(f.LogicalID) == strings.ToLower(name) {
			return f.LogicalID, true
		}
	}
	return "", false
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
