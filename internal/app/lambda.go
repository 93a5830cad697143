package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"genjobs/internal/httpapi"
)

// StartHTTP runs an API function in Lambda: it builds the handler once at
// init and serves API Gateway events with it. A configuration error ends the
// init, which Lambda reports as an init failure.
func StartHTTP(name string, build func(Deps) (http.Handler, error)) {
	d, err := FromEnv(context.Background())
	if err == nil {
		var h http.Handler
		if h, err = build(d); err == nil {
			lambda.Start(httpapi.LambdaHandler(d.Log, h))
			return
		}
	}
	slog.Error("init failed", "function", name, "error", err.Error())
	fmt.Fprintln(os.Stderr, name+":", err)
	os.Exit(1)
}
