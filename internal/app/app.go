// Package app wires each function: configuration from the environment,
// adapters built once, handlers on top. functions/*/main.go and the local
// runner both build their handlers here, so that what runs locally is what
// runs in Lambda.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/auth"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/lifecycle"
	"genjobs/internal/openapi"
	"genjobs/internal/queue"
	"genjobs/internal/store"
)

// Deps is what every function is built from.
type Deps struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client

	Table        string // TABLE_NAME
	JobsQueueURL string // JOBS_QUEUE_URL
	BaseURL      string // BASE_URL: the public address of the API
	// AllowPrivateDestinations (ALLOW_PRIVATE_DESTINATIONS) lets webhooks and
	// input fetches reach loopback and private addresses: local development.
	AllowPrivateDestinations bool

	Clock clock.Clock
	Log   *slog.Logger
}

// FromEnv reads the configuration and builds the AWS clients. It does no
// network I/O: credentials resolve on first use. Endpoint overrides come
// from the SDK's own AWS_ENDPOINT_URL_<SERVICE> variables.
func FromEnv(ctx context.Context) (Deps, error) {
	d := Deps{
		Table:        os.Getenv("TABLE_NAME"),
		JobsQueueURL: os.Getenv("JOBS_QUEUE_URL"),
		BaseURL:      os.Getenv("BASE_URL"),
		Clock:        clock.System{},
		Log:          slog.New(slog.NewJSONHandler(os.Stdout, nil)),
	}
	if v := os.Getenv("ALLOW_PRIVATE_DESTINATIONS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return d, fmt.Errorf("ALLOW_PRIVATE_DESTINATIONS must be true or false, not %q", v)
		}
		d.AllowPrivateDestinations = b
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return d, fmt.Errorf("load AWS configuration: %w", err)
	}
	d.DynamoDB, d.SQS = Clients(cfg, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "")
	return d, nil
}

// Clients builds the SDK clients from cfg. DynamoDB Local omits the CRC32
// header on errors, so local clients skip that check (LOCAL-STACK.md).
func Clients(cfg aws.Config, local bool) (*dynamodb.Client, *sqs.Client) {
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = local
	})
	return db, sqs.NewFromConfig(cfg)
}

// need names the first missing variable.
func need(vars ...[2]string) error {
	for _, v := range vars {
		if v[1] == "" {
			return fmt.Errorf("%s is not set", v[0])
		}
	}
	return nil
}

func (d Deps) store() *store.Store { return store.New(d.DynamoDB, d.Table) }

func (d Deps) lifecycle() *lifecycle.Jobs {
	return &lifecycle.Jobs{Store: d.store(), Queue: queue.NewJobs(d.SQS, d.JobsQueueURL), Clock: d.Clock, Log: d.Log}
}

func (d Deps) authenticator() auth.Authenticator { return auth.Authenticator{Dir: d.store()} }

// Generate builds the generate function's handler.
func Generate(d Deps) (http.Handler, error) {
	if err := need([2]string{"TABLE_NAME", d.Table}, [2]string{"JOBS_QUEUE_URL", d.JobsQueueURL}); err != nil {
		return nil, err
	}
	cat, err := catalog.New()
	if err != nil {
		return nil, err
	}
	g := &httpapi.Generate{
		Auth:              d.authenticator(),
		Catalog:           cat,
		Jobs:              d.store(),
		Queue:             queue.NewJobs(d.SQS, d.JobsQueueURL),
		Clock:             d.Clock,
		BaseURL:           d.BaseURL,
		AllowHTTPWebhooks: d.AllowPrivateDestinations,
	}
	return httpapi.Middleware(d.Log, g.Routes()), nil
}

// Jobs builds the jobs function's handler.
func Jobs(d Deps) (http.Handler, error) {
	if err := need([2]string{"TABLE_NAME", d.Table}, [2]string{"JOBS_QUEUE_URL", d.JobsQueueURL}); err != nil {
		return nil, err
	}
	h := &httpapi.Jobs{Auth: d.authenticator(), Jobs: d.store(), Cancel: d.lifecycle()}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}

// OpenAPI builds the handler of the public OpenAPI document.
func OpenAPI(d Deps) (http.Handler, error) {
	cat, err := catalog.New()
	if err != nil {
		return nil, err
	}
	build := func(baseURL string) ([]byte, error) { return openapi.Build(cat, baseURL) }
	h, err := httpapi.OpenAPI(build, d.BaseURL)
	if err != nil {
		return nil, err
	}
	return httpapi.Middleware(d.Log, h), nil
}

// NotFound builds the $default route's handler.
func NotFound(d Deps) (http.Handler, error) {
	return httpapi.Middleware(d.Log, httpapi.NotFound()), nil
}
