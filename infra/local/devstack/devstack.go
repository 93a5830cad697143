// Package devstack sets the local stack up the way template.yaml sets AWS
// up: the table, the queues, the function handlers by logical id, and a
// demo workspace to try it with. The runner, `make invoke` and the
// benchmarks share it.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/gateway"
	"genjobs/internal/app"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/queue"
	"genjobs/internal/store"
)

// Local resource names.
const (
	Table     = "genjobs"
	JobsQueue = "genjobs-jobs"
)

// The demo workspace of API-DECISIONS 10.
const (
	DemoWorkspace = "ws_demo"
	demoBalance   = 25 * billing.USD
)

// Provision creates the table and the queues unless they exist, and returns
// the jobs queue's URL.
func Provision(ctx context.Context, db *dynamodb.Client, q *sqs.Client, table, jobsQueue string) (string, error) {
	if err := store.CreateTable(ctx, db, table); err != nil {
		return "", err
	}
	url, _, err := queue.Create(ctx, q, jobsQueue)
	return url, err
}

// HTTPFunctions maps the logical id of each API function of template.yaml to
// the builder of its handler.
var HTTPFunctions = map[string]func(app.Deps) (http.Handler, error){
	"GenerateFunction": app.Generate,
	"JobsFunction":     app.Jobs,
	"OpenAPIFunction":  app.OpenAPI,
	"NotFoundFunction": app.NotFound,
}

// Handlers builds every API function's Lambda handler, as Lambda would at
// init, keyed by logical id.
func Handlers(d app.Deps) (map[string]gateway.Handler, error) {
	out := map[string]gateway.Handler{}
	for id, build := range HTTPFunctions {
		h, err := build(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		out[id] = httpapi.LambdaHandler(d.Log, h)
	}
	return out, nil
}

// Deps is the configuration the functions get locally: what template.yaml's
// environment would give them, pointed at the emulators.
func Deps(db *dynamodb.Client, q *sqs.Client, queueURL, baseURL string, log *slog.Logger) app.Deps {
	return app.Deps{
		DynamoDB: db, SQS: q,
		Table: Table, JobsQueueURL: queueURL, BaseURL: baseURL,
		AllowPrivateDestinations: true,
		Clock:                    clock.System{},
		Log:                      log,
	}
}

// SeedDemo makes sure the demo workspace exists (created with API access),
// has had its 25 USD top-up (once: the payment id is fixed) and a token, and returns the token. The token is kept in tokenFile so that
// every run prints the same one.
func SeedDemo(ctx context.Context, s *store.Store, tokenFile string) (string, error) {
	now := time.Now()
	err := s.CreateWorkspace(ctx, auth.Workspace{
		ID: DemoWorkspace, Name: "Demo", APIEnabled: true,
		MaxConcurrent: auth.DefaultMaxConcurrent, MaxRunning: auth.DefaultMaxRunning, CreatedAt: now,
	})
	if err != nil && !errors.Is(err, store.ErrExists) {
		return "", err
	}
	if _, err := s.TopUp(ctx, DemoWorkspace, "demo-seed", demoBalance, now); err != nil {
		return "", err
	}
	token, err := readToken(tokenFile)
	if err != nil {
		return "", err
	}
	if token == "" {
		token, _ = auth.NewToken()
	}
	t, err := s.TokenByHash(ctx, auth.Hash(token))
	switch {
	case errors.Is(err, auth.ErrNotFound):
		err = s.CreateToken(ctx, auth.Token{
			ID: auth.NewID("tok_"), WorkspaceID: DemoWorkspace, Name: "demo",
			Hash: auth.Hash(token), CreatedAt: now,
		})
		if err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	case t.RevokedAt != nil:
		// Revoked by hand: make a new one rather than print a dead token.
		if err := os.Remove(tokenFile); err != nil {
			return "", err
		}
		return SeedDemo(ctx, s, tokenFile)
	}
	if err := os.MkdirAll(filepath.Dir(tokenFile), 0o700); err != nil {
		return "", err
	}
	return token, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
