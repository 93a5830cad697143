// Package devstack sets the local stack up the way template.yaml sets AWS
// up: the table, the queues, the buckets, every function's handler built
// with the Environment the template gives it, and a demo workspace to try
// it with. The runner, `make invoke` and the
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
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/app"
	"genjobs/internal/app/webhookfn"
	"genjobs/internal/app/workerfn"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/blob"
	"genjobs/internal/httpapi"
	"genjobs/internal/queue"
	"genjobs/internal/store"
)

// Local resource names.
const (
	Table           = "genjobs"
	JobsQueue       = "genjobs-jobs"
	DeliveriesQueue = "genjobs-deliveries"
	ResultsBucket   = "genjobs-results"
	AssetsBucket    = "genjobs-assets"
	// SigningKeyFile is the local webhook signing key (no KMS here),
	// relative to the repository: created on first use, kept with .local/.
	SigningKeyFile = ".local/webhook-key.pem"
)

// The demo workspace of API-DECISIONS 10.
const (
	DemoWorkspace = "ws_demo"
	demoBalance   = 25 * billing.USD
)

// Functions maps each directory under functions/ to the builder its main.go
// passes to app.Start (a test checks each main against it). A function's
// logical id in template.yaml is the directory's name in CamelCase followed
// by "Function" (app.FunctionName).
var Functions = map[string]app.Function{
	"generate":  {HTTP: app.Generate},
	"jobs":      {HTTP: app.Jobs},
	"usage":     {HTTP: app.Usage},
	"styles":    {HTTP: app.Styles},
	"jwks":      {HTTP: webhookfn.JWKS},
	"deliverer": {SQS: webhookfn.Deliverer},
	"assets":    {HTTP: app.Assets},
	"openapi":   {HTTP: app.OpenAPI},
	"notfound":  {HTTP: app.NotFound},
	"worker":    {SQS: workerfn.Build},
	"sweeper":   {Schedule: app.Sweeper},
}

// Stack is the local stack: the emulators' clients and the names of the
// resources template.yaml would create.
type Stack struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	S3       *s3.Client

	Table, JobsQueue, DeliveriesQueue, ResultsBucket, AssetsBucket string
	BaseURL                                                        string // the API's address
	SigningKeyFile                                                 string // the webhook key, a P-256 PEM file

	// Set by Provision.
	JobsQueueURL, JobsDLQURL             string
	DeliveriesQueueURL, DeliveriesDLQURL string
}

// New returns the stack of the usual local names on the given clients.
func New(db *dynamodb.Client, q *sqs.Client, s *s3.Client, baseURL string) *Stack {
	return &Stack{DynamoDB: db, SQS: q, S3: s, BaseURL: baseURL,
		Table: Table, JobsQueue: JobsQueue, DeliveriesQueue: DeliveriesQueue, ResultsBucket: ResultsBucket,
		AssetsBucket: AssetsBucket, SigningKeyFile: SigningKeyFile}
}

// Provision creates the table, the queues and the buckets unless they exist.
func (s *Stack) Provision(ctx context.Context) error {
	if err := store.CreateTable(ctx, s.DynamoDB, s.Table); err != nil {
		return err
	}
	var err error
	if s.JobsQueueURL, s.JobsDLQURL, err = queue.Create(ctx, s.SQS, s.JobsQueue); err != nil {
		return err
	}
	if s.DeliveriesQueueURL, s.DeliveriesDLQURL, err = queue.CreateDeliveries(ctx, s.SQS, s.DeliveriesQueue); err != nil {
		return err
	}
	return blob.CreateBuckets(ctx, s.S3, s.ResultsBucket, s.AssetsBucket)
}

// Resolve is what template.yaml's resources and parameters stand for
// locally: the values its functions' Environment refers to.
func (s *Stack) Resolve() map[string]string {
	return map[string]string{
		"Table":           s.Table,
		"JobsQueue":       s.JobsQueueURL,
		"JobsDLQ":         s.JobsDLQURL,
		"DeliveriesQueue": s.DeliveriesQueueURL,
		"DeliveriesDLQ":   s.DeliveriesDLQURL,
		// No KMS here: the signing functions read a local key file.
		"WebhookSigningKey.Arn":        "file:" + s.SigningKeyFile,
		"PreviousWebhookSigningKeyArn": "",
		"ResultsBucket":                s.ResultsBucket,
		"AssetsBucket":                 s.AssetsBucket,
		"BaseUrl":                      s.BaseURL,
		"AllowPrivateDestinations":     "true", // API-DECISIONS 10: a receiver on 127.0.0.1 works
		"AppUrl":                       s.BaseURL + AppPath,
	}
}

// QueueURL is the local URL of a queue of the template, by logical id.
func (s *Stack) QueueURL(id string) (string, error) {
	switch id {
	case "JobsQueue":
		return s.JobsQueueURL, nil
	case "JobsDLQ":
		return s.JobsDLQURL, nil
	case "DeliveriesQueue":
		return s.DeliveriesQueueURL, nil
	case "DeliveriesDLQ":
		return s.DeliveriesDLQURL, nil
	}
	return "", fmt.Errorf("the local stack has no queue for %s (devstack.Provision creates them)", id)
}

// Functions builds the handler of every function of tpl, as Lambda would at
// init, each with the Environment the template gives it: no function is
// listed here: the template and Functions decide.
func (s *Stack) Functions(tpl *sam.Template, log *slog.Logger) (map[string]triggers.Handlers, error) {
	out := map[string]triggers.Handlers{}
	for _, f := range tpl.Functions() {
		h, err := s.Function(tpl, f.LogicalID, log)
		if err != nil {
			return nil, err
		}
		out[f.LogicalID] = h
	}
	return out, nil
}

// Function builds one function of tpl by logical id.
func (s *Stack) Function(tpl *sam.Template, id string, log *slog.Logger) (triggers.Handlers, error) {
	env, err := tpl.Env(id, s.Resolve())
	if err != nil {
		return triggers.Handlers{}, err
	}
	d, err := app.Config(func(k string) string { return env[k] })
	if err != nil {
		return triggers.Handlers{}, fmt.Errorf("%s: %w", id, err)
	}
	d.DynamoDB, d.SQS, d.S3, d.Log = s.DynamoDB, s.SQS, s.S3, log
	fn, ok := Functions[app.FunctionName(id)]
	if !ok {
		return triggers.Handlers{}, fmt.Errorf("%s: no builder in devstack.Functions for functions/%s", id, app.FunctionName(id))
	}
	var h triggers.Handlers
	switch {
	case fn.HTTP != nil:
		var hh http.Handler
		if hh, err = fn.HTTP(d); err == nil {
			h.HTTP = httpapi.LambdaHandler(log, hh)
		}
	case fn.SQS != nil:
		var sh app.SQSHandler
		if sh, err = fn.SQS(d); err == nil {
			h.SQS = sh
		}
	case fn.Schedule != nil:
		var sh app.ScheduleHandler
		if sh, err = fn.Schedule(d); err == nil {
			h.Schedule = sh
		}
	}
	if err != nil {
		return triggers.Handlers{}, fmt.Errorf("%s: %w", id, err)
	}
	return h, nil
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
	if err := seedStyles(ctx, s, now); err != nil { // and the demo's styles (styles.go)
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
