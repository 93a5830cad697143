package app

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"genjobs/internal/httpapi"
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
	// In Lambda, standard output goes to CloudWatch Logs, which reads the
	// metrics' EMF lines; the local stack runs without them.
	d.Metrics = metrics.New(os.Stdout, name, d.Clock)
	switch {
	case f.HTTP != nil:
		h, err := f.HTTP(d)
		if err != nil {
			return err
		}
		lambda.Start(httpapi.LambdaHandler(d.Log, h))
	case f.SQS != nil:
		h, err := f.SQS(d)
		if err != nil {
			return err
		}
		lambda.Start(h)
	case f.Schedule != nil:
		h, err := f.Schedule(d)
		if err != nil {
			return err
		}
		lambda.Start(h)
	case f.Stream != nil:
		h, err := f.Stream(d)
		if err != nil {
			return err
		}
		lambda.Start(h)
	}
	return errors.New("no builder given")
}
