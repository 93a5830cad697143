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
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/emulator"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/store"
)

// invoke runs one function's handler on one event file against the running
// local stack, like `sam local invoke`, and prints the handler's response.
// In the event, {{TOKEN}} becomes the demo token and {{JOB_ID}} the JOB_ID
// variable or else the demo workspace's newest job.
func invoke(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: invoke FUNCTION EVENT_FILE (FUNCTION: generate, jobs, openapi, notfound or a logical id)")
	}
	id, ok := logicalID(args[0])
	if !ok {
		return fmt.Errorf("no function %q in template.yaml's API", args[0])
	}
	raw, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}
	p, err := localPorts()
	if err != nil {
		return err
	}
	ctx := context.Background()
	db := emulator.DynamoDBClient("http://127.0.0.1:" + strconv.Itoa(p.dynamodb))
	q := emulator.SQSClient("http://127.0.0.1:" + strconv.Itoa(p.fauxqs))
	qu, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(devstack.JobsQueue)})
	if err != nil {
		return fmt.Errorf("the local stack is not running (start it with make run): %w", err)
	}

	text := string(raw)
	if strings.Contains(text, "{{TOKEN}}") {
		token, err := os.ReadFile(filepath.Join(root, ".local", "demo-token"))
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
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal([]byte(text), &ev); err != nil {
		return fmt.Errorf("%s is not an API Gateway v2 event: %w", args[1], err)
	}

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	deps := devstack.Deps(db, q, aws.ToString(qu.QueueUrl), "http://127.0.0.1:"+strconv.Itoa(p.api), log)
	h, err := devstack.HTTPFunctions[id](deps)
	if err != nil {
		return err
	}
	resp, err := httpapi.LambdaHandler(log, h)(ctx, ev)
	if err != nil {
		return fmt.Errorf("%s returned a Lambda error: %w", id, err)
	}
	return printJSON(os.Stdout, resp)
}

// logicalID accepts "generate" for GenerateFunction, or the logical id itself.
func logicalID(name string) (string, bool) {
	for id := range devstack.HTTPFunctions {
		if id == name || strings.EqualFold(strings.TrimSuffix(id, "Function"), name) {
			return id, true
		}
	}
	return "", false
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
