package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"genjobs/internal/httpapi"
	"genjobs/internal/logging"
	"genjobs/internal/metrics"
)

// Start runs the function named name (its functions/ directory) in Lambda:
// it builds the handler once at init and serves events with it. A
// configuration error ends the init, which Lambda reports as an init failure.
// Each main names its own builder, so its binary links only what it uses.
func Start(name string, f Function) {
	err := start(name, f)
	slog.Error("init failed", "function", name, "error", err.Error())
	fmt.Fprintln(os.Stderr, name+":", err)
	os.Exit(1)
}

func start(name string, f Function) error {
	d, err := FromEnv()
	if err != nil {
		return err
	}
	h, err := Lambda(name, f, d, os.Stdout, os.Getenv)
	if err != nil {
		return err
	}
	lambda.Start(h)
	return errors.New("the Lambda runtime loop ended")
}

// Lambda builds the handler Lambda invokes for f, from d (Function.Handler).
// Its log lines (package logging: the level of Lambda's LoggingConfig, each
// line with the invocation's request id, trace id and cold-start flag) and
// its metrics (with ColdStart on an execution environment's first
// invocation) are written to out, standard output in Lambda, which
// CloudWatch Logs reads.
func Lambda(name string, f Function, d Deps, out io.Writer, getenv func(string) string) (any, error) {
	level := logging.Level(getenv)
	inv := logging.NewInvocations(lambdacontext.MaxConcurrency())
	d.Log = logging.New(out, level, inv)
	d.Metrics = metrics.New(out, name, d.Clock).KeptAt(logging.LevelName(max(level, slog.LevelInfo)))
	o := observer{inv: inv, metrics: d.Metrics}
	h, err := f.Handler(d)
	switch {
	case err != nil:
		return nil, err
	case h.HTTP != nil:
		return observe(o, httpapi.LambdaHandler(d.Log, h.HTTP)), nil
	case h.SQS != nil:
		return observe(o, h.SQS), nil
	case h.Stream != nil:
		return observe(o, h.Stream), nil
	}
	run := observe(o, func(ctx context.Context, e events.EventBridgeEvent) (struct{}, error) {
		return struct{}{}, h.Schedule(ctx, e)
	})
	return func(ctx context.Context, e events.EventBridgeEvent) error {
		_, err := run(ctx, e)
		return err
	}, nil
}

type observer struct {
	inv     *logging.Invocations
	metrics *metrics.Emitter
}

// observe marks the invocations of h for the logs, and counts cold starts.
func observe[E, R any](o observer, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		inv, end := o.inv.Begin(ctx)
		defer end()
		if inv.ColdStart {
			o.metrics.Count(metrics.ColdStart, "", 1)
		}
		return h(ctx, e)
	}
}
