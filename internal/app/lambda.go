package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"genjobs/internal/httpapi"
)

// Start runs the function named name (its functions/ directory) in Lambda:
// it builds the handler once at init and serves events with it. A
// configuration error ends the init, which Lambda reports as an init failure.
func Start(name string) {
	err := start(name)
	slog.Error("init failed", "function", name, "error", err.Error())
	fmt.Fprintln(os.Stderr, name+":", err)
	os.Exit(1)
}

func start(name string) error {
	f, ok := Functions[name]
	if !ok {
		return fmt.Errorf("no function %q in app.Functions", name)
	}
	d, err := FromEnv(context.Background())
	if err != nil {
		return err
	}
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
	}
	return fmt.Errorf("function %q has no builder", name)
}
