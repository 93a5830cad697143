package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/endpoints"
	"genjobs/internal/emulator"
	"genjobs/internal/store"
)

// target is where a command reads and writes.
type target struct {
	db    *dynamodb.Client
	table string
	// local is DynamoDB Local's host:port, or "" in AWS; it words the
	// "not running" message.
	local string
	// where names the place in messages: "on DynamoDB Local at ..." or "in AWS (region)".
	where string
	// sqs and deliveriesURL reach the deliveries queue, found on first use
	// (cli.deliveries): only webhook redeliver sends to it.
	sqs           *sqs.Client
	deliveriesURL string
}

// store returns the store of the command's target, resolving it from the
// global flags unless a test set one.
func (c *cli) store(ctx context.Context) (*store.Store, error) {
	if c.target == nil {
		t, err := resolve(ctx, c.g, c.getenv, c.repoRoot)
		if err != nil {
			return nil, err
		}
		c.target = t
	}
	return store.New(c.target.db, c.target.table), nil
}

// resolve turns the global flags into a target. Only --aws leaves the
// machine: the local client is built from static credentials, so no
// AWS_* variable or profile can redirect it.
func resolve(ctx context.Context, g globals, getenv func(string) string, repoRoot func() (string, error)) (*target, error) {
	if !g.aws {
		if g.stack != "" {
			return nil, usagef("--stack names a deployment and needs --aws")
		}
		return resolveLocal(g, getenv, repoRoot)
	}
	switch {
	case g.table == "" && g.stack == "":
		return nil, usagef("--aws needs --table NAME or --stack NAME")
	case g.table != "" && g.stack != "":
		return nil, usagef("give --table or --stack, not both")
	}
	// The default HTTP client: config.WithHTTPClient panics when
	// AWS_CA_BUNDLE is set (docs/local-stack.md, "Emulator and SDK traps").
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region configured: set AWS_REGION, or AWS_PROFILE to a profile with a region")
	}
	table := g.table
	if g.stack != "" {
		if table, err = stackTable(ctx, cloudformation.NewFromConfig(cfg), g.stack, cfg.Region); err != nil {
			return nil, err
		}
	}
	return &target{
		db:    dynamodb.NewFromConfig(cfg),
		table: table,
		where: fmt.Sprintf("in AWS (%s)", cfg.Region),
	}, nil
}

// resolveLocal finds DynamoDB Local: at 127.0.0.1:$DYNAMODB_PORT when it is
// set, else where the running `make run` recorded it (package endpoints),
// else at its default port.
func resolveLocal(g globals, getenv func(string) string, repoRoot func() (string, error)) (*target, error) {
	addr := "127.0.0.1:8000"
	if v := getenv("DYNAMODB_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return nil, usagef("DYNAMODB_PORT must be a port number, not %q", v)
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	} else if st, err := findStack(repoRoot); err == nil {
		addr = strings.TrimPrefix(st.DynamoDB, "http://")
	}
	// One dial answers "is the stack up?" at once, where the SDK would
	// retry with backoff and then print a wrapped connection error.
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, notRunning(addr)
	}
	conn.Close()
	table := g.table
	if table == "" {
		table = devstack.Table
	}
	return &target{
		db:    emulator.DynamoDBClient("http://" + addr),
		table: table,
		local: addr,
		where: "on DynamoDB Local at " + addr,
	}, nil
}

// findStack reads make run's record of the repository repoRoot finds.
func findStack(repoRoot func() (string, error)) (endpoints.Stack, error) {
	if repoRoot == nil {
		return endpoints.Stack{}, endpoints.ErrNotRunning
	}
	root, err := repoRoot()
	if err != nil {
		return endpoints.Stack{}, err
	}
	return endpoints.Find(endpoints.StateDir(root))
}

func notRunning(addr string) error {
	return fmt.Errorf("the local stack is not running on %s; start it with make run", addr)
}

// stackTable reads the TableName output of a deployed stack.
func stackTable(ctx context.Context, cf *cloudformation.Client, stack, region string) (string, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationError" {
		return "", fmt.Errorf("stack %s not found in AWS (%s): %s", stack, region, api.ErrorMessage())
	}
	if err != nil {
		return "", fmt.Errorf("describe stack %s: %w", stack, err)
	}
	if len(out.Stacks) == 0 {
		return "", fmt.Errorf("stack %s not found in AWS (%s)", stack, region)
	}
	return tableOutput(stack, out.Stacks[0].Outputs)
}

// tableOutput picks the TableName output that template.yaml declares.
func tableOutput(stack string, outputs []cftypes.Output) (string, error) {
	for _, o := range outputs {
		if aws.ToString(o.OutputKey) == "TableName" && aws.ToString(o.OutputValue) != "" {
			return aws.ToString(o.OutputValue), nil
		}
	}
	return "", fmt.Errorf("stack %s has no TableName output (is it this project's stack, fully deployed?)", stack)
}

// explain rewords the storage errors an operator can act on; the rest pass
// through (run flattens them to one line).
func (t *target) explain(err error) error {
	if t.local != "" && errors.Is(err, syscall.ECONNREFUSED) {
		return notRunning(t.local)
	}
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) && t.local != "" {
		return fmt.Errorf("table %s does not exist %s; make run creates %s", t.table, t.where, devstack.Table)
	}
	if errors.As(err, &missing) {
		return fmt.Errorf("table %s does not exist %s", t.table, t.where)
	}
	return err
}
