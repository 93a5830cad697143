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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/auth"
	"genjobs/internal/awsclient"
	"genjobs/internal/blob"
	"genjobs/internal/clock"
	"genjobs/internal/fault"
	"genjobs/internal/httpapi"
	"genjobs/internal/lifecycle"
	"genjobs/internal/metrics"
	"genjobs/internal/openapi/published"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/sweeper"
	"genjobs/internal/webhook"
)

// Function builds one Lambda function's handler: exactly one of the four.
type Function struct {
	HTTP     func(Deps) (http.Handler, error)
	SQS      func(Deps) (SQSHandler, error)
	Schedule func(Deps) (ScheduleHandler, error)
	Stream   func(Deps) (StreamHandler, error)
}

// SQSHandler handles a batch of an SQS event source mapping.
type SQSHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// ScheduleHandler handles a scheduled EventBridge event.
type ScheduleHandler = func(context.Context, events.EventBridgeEvent) error

// StreamHandler handles a batch of a DynamoDB stream event source mapping.
type StreamHandler = func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// FunctionName is the functions/ directory of a template logical id:
// WorkerFunction -> worker, OpenAPIFunction -> openapi.
func FunctionName(logicalID string) string {
	return strings.ToLower(strings.TrimSuffix(logicalID, "Function"))
}

// Deps is what every function is built from.
type Deps struct {
	DynamoDB *dynamodb.Client
	// LocalSQS is the local runner's SQS client; in Lambda each function
	// that sends to a queue makes its own (Queues), so that the others do
	// not link the SQS client.
	LocalSQS *sqs.Client
	// S3 is set by the local runner; in Lambda it is made from AWS by the
	// functions that use it, so that the others do not link the S3 client.
	// AWS builds the clients a function makes for itself (KMS, Secrets
	// Manager): locally its BaseEndpoint is moto's server, so that those
	// clients are built by the same code as in Lambda.
	S3  *s3.Client
	AWS *aws.Config

	Table        string // TABLE_NAME
	JobsQueueURL string // JOBS_QUEUE_URL
	JobsDLQURL   string // JOBS_DLQ_URL
	// The light worker's queue and its DLQ (LIGHT_JOBS_QUEUE_URL,
	// LIGHT_JOBS_DLQ_URL): jobs lifecycle.QueueFor calls light; empty, they
	// go to the jobs queue. MaxSourcePixels (MAX_SOURCE_PIXELS) makes a
	// worker hand jobs with larger sources to the heavy lane: the light one.
	LightJobsQueueURL string
	LightJobsDLQURL   string
	MaxSourcePixels   int
	ResultsBucket     string // RESULTS_BUCKET
	AssetsBucket      string // ASSETS_BUCKET
	BaseURL           string // BASE_URL: the public address of the API
	AppURL            string // APP_URL: the web application's address (styles.go)
	// AllowPrivateDestinations (ALLOW_PRIVATE_DESTINATIONS) lets webhooks and
	// input fetches reach loopback and private addresses: local development.
	AllowPrivateDestinations bool
	// Webhooks: the deliveries queue and its DLQ (DELIVERIES_QUEUE_URL,
	// DELIVERIES_DLQ_URL), the signing key (SIGNING_KEY_ID: a KMS key id,
	// ARN or alias; locally moto's), the key before the last
	// rotation (SIGNING_PREVIOUS_KEY_ID, listed in the JWKS), and a
	// compressed retry schedule for local use (WEBHOOK_SCHEDULE, "5s,5m,...").
	DeliveriesQueueURL   string
	DeliveriesDLQURL     string
	SigningKeyID         string
	PreviousSigningKeyID string
	WebhookSchedule      []time.Duration
	// Model providers (docs/providers.md): the provider queue of routed
	// jobs' steps (PROVIDER_QUEUE_URL) and the routes (PROVIDER_ROUTES, a
	// JSON document checked at init).
	ProviderQueueURL string
	ProviderRoutes   string
	// ProviderSecretsPrefix (PROVIDER_SECRETS_PREFIX) is where the model
	// providers' secrets are: "{stack name}/providers/" (internal/secrets).
	ProviderSecretsPrefix string
	// PricesJSON (PRICES_JSON) overrides entries of the default price list
	// (prices.Load); empty keeps the defaults.
	PricesJSON string
	// RequeueAfter (SWEEPER_REQUEUE_AFTER) is how long the sweeper lets an
	// untaken job wait before it sends its message again, and LeaseFor
	// (WORKER_LEASE) how long a worker's claim keeps others out without a
	// heartbeat; shorter values are for tests of a local stack whose queue
	// loses its messages. 0: the defaults (2 minutes, 150 s).
	RequeueAfter time.Duration
	LeaseFor     time.Duration

	Clock clock.Clock
	Log   *slog.Logger
	// Metrics writes the function's CloudWatch metrics (EMF lines on
	// standard output); set by Start in Lambda, nil elsewhere.
	Metrics *metrics.Emitter

	// Retries is how the clients retry (awsclient.Requests or Events): set
	// with WithRetries by each builder, which knows what kind of function it makes.
	Retries awsclient.Profile
}

// Config reads the configuration from getenv, without building clients.
func Config(getenv func(string) string) (Deps, error) {
	d := Deps{
		Table:        getenv("TABLE_NAME"),
		JobsQueueURL: getenv("JOBS_QUEUE_URL"),
		JobsDLQURL:   getenv("JOBS_DLQ_URL"),

		LightJobsQueueURL: getenv("LIGHT_JOBS_QUEUE_URL"),
		LightJobsDLQURL:   getenv("LIGHT_JOBS_DLQ_URL"),
		ResultsBucket:     getenv("RESULTS_BUCKET"),
		AssetsBucket:      getenv("ASSETS_BUCKET"),
		BaseURL:           strings.TrimSuffix(getenv("BASE_URL"), "/"),
		PricesJSON:        getenv("PRICES_JSON"),
		AppURL:            strings.TrimSuffix(getenv("APP_URL"), "/"),

		ProviderQueueURL: getenv("PROVIDER_QUEUE_URL"),
		ProviderRoutes:   getenv("PROVIDER_ROUTES"),

		DeliveriesQueueURL:   getenv("DELIVERIES_QUEUE_URL"),
		DeliveriesDLQURL:     getenv("DELIVERIES_DLQ_URL"),
		SigningKeyID:         getenv("SIGNING_KEY_ID"),
		PreviousSigningKeyID: getenv("SIGNING_PREVIOUS_KEY_ID"),
		WebhookSchedule:      webhook.Schedule,
		Clock:                clock.System{},
		Log:                  slog.New(slog.NewJSONHandler(os.Stdout, nil)),
	}
	d.ProviderSecretsPrefix = getenv("PROVIDER_SECRETS_PREFIX")
	if v := getenv("ALLOW_PRIVATE_DESTINATIONS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return d, fmt.Errorf("ALLOW_PRIVATE_DESTINATIONS must be true or false, not %q", v)
		}
		d.AllowPrivateDestinations = b
	}
	// Without pointers into d, which would move it to the heap and with it
	// the type of every client it holds into the binary.
	var err error
	if d.RequeueAfter, err = positiveDuration(getenv, "SWEEPER_REQUEUE_AFTER"); err != nil {
		return d, err
	}
	if d.LeaseFor, err = positiveDuration(getenv, "WORKER_LEASE"); err != nil {
		return d, err
	}
	if v := getenv("MAX_SOURCE_PIXELS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return d, fmt.Errorf("MAX_SOURCE_PIXELS must be a whole number of pixels, not %q", v)
		}
		d.MaxSourcePixels = n
	}
	if v := getenv("WEBHOOK_SCHEDULE"); v != "" {
		sched, err := webhook.ParseSchedule(v)
		if err != nil {
			return d, fmt.Errorf("WEBHOOK_SCHEDULE: %w", err)
		}
		d.WebhookSchedule = sched
	}
	return d, nil
}

// positiveDuration reads the duration variable name, 0 when unset.
func positiveDuration(getenv func(string) string, name string) (time.Duration, error) {
	raw := getenv(name)
	if raw == "" {
		return 0, nil
	}
	dur, err := time.ParseDuration(raw)
	if err != nil || dur <= 0 {
		return 0, fmt.Errorf("%s must be a positive duration such as 30s, not %q", name, raw)
	}
	return dur, nil
}

// FromEnv reads the configuration and builds the AWS clients. It does no
// network I/O: credentials resolve on first use. Endpoint overrides come
// from the SDK's own AWS_ENDPOINT_URL_<SERVICE> variables.
func FromEnv(ctx context.Context) (Deps, error) {
	d, err := Config(os.Getenv)
	if err != nil {
		return d, err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return d, fmt.Errorf("load AWS configuration: %w", err)
	}
	d.AWS = &cfg
	d.DynamoDB = DynamoDBClient(cfg, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "")
	return d, nil
}

// DynamoDBClient builds the DynamoDB client from cfg. DynamoDB Local omits
// the CRC32 header on errors, so local clients skip that check
// (docs/local-stack.md, "Emulator and SDK traps").
func DynamoDBClient(cfg aws.Config, local bool) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = local
	})
}

// Queues is the SQS client, following d's profile: the local runner's, or
// one made from the AWS configuration. Only the builders of functions that
// send to a queue call it.
func (d Deps) Queues() *sqs.Client {
	client := d.LocalSQS
	if client == nil {
		client = sqs.NewFromConfig(*d.AWS)
	}
	return awsclient.SQS(client, d.Retries.SQS)
}

// WithRetries returns d with its clients following profile p: every
// builder calls it first, so that the clients the local runner passes in follow the
// profile as Lambda's do. The clients are derived, not rebuilt: endpoints,
// credentials and the HTTP client's TLS roots stay.
func (d Deps) WithRetries(p awsclient.Profile) Deps {
	d.Retries = p
	if d.DynamoDB != nil {
		d.DynamoDB = awsclient.DynamoDB(d.DynamoDB, p.DynamoDB)
	}
	// SQS follows p in Queues and S3 in Blobs: deriving them here would
	// link their clients into every function.
	return d
}

// Require checks that the configuration a builder needs is set: settings
// maps each environment variable to the value read from it. A function
// missing one stops at init, naming every one missing.
func Require(settings map[string]string) error {
	var missing []string
	for name, value := range settings {
		if value == "" {
			missing = append(missing, name)
		}
	}
	switch slices.Sort(missing); len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s is not set", missing[0])
	}
	return fmt.Errorf("%s are not set", strings.Join(missing, ", "))
}

// Store is the table adapter.
func (d Deps) Store() *store.Store { return store.New(d.DynamoDB, d.Table) }

// Blobs builds the S3 adapter. A local S3 endpoint (fauxqs) needs
// path-style addresses.
func (d Deps) Blobs() *blob.Store {
	client := d.S3
	if client != nil {
		client = awsclient.S3(client, d.Retries.S3)
	} else {
		client = s3.NewFromConfig(*d.AWS, func(o *s3.Options) {
			o.UsePathStyle = os.Getenv("AWS_ENDPOINT_URL_S3") != ""
		}, awsclient.S3Options(d.Retries.S3))
	}
	return blob.New(client, d.ResultsBucket, d.AssetsBucket)
}

// ResultLinks mints result URLs without the S3 client, for the functions
// that only hand them out (blob.Presigner).
func (d Deps) ResultLinks() blob.ResultLinks {
	if d.S3 != nil { // the local runner's client: its endpoint and credentials
		o := d.S3.Options()
		return blob.NewResultLinks(blob.NewPresigner(o.Credentials, o.Region, aws.ToString(o.BaseEndpoint)), d.ResultsBucket)
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = aws.ToString(d.AWS.BaseEndpoint)
	}
	return blob.NewResultLinks(blob.NewPresigner(d.AWS.Credentials, d.AWS.Region, endpoint), d.ResultsBucket)
}

// JobQueue sends a job's message to the queue that runs it: the provider
// queue for a routed job, else the queue of its lane (lifecycle.QueueFor).
func (d Deps) JobQueue() *queue.JobSender {
	return queue.NewJobSender(d.Queues(), d.JobsQueueURL).
		WithLane(lifecycle.LaneLight, d.LightJobsQueueURL).
		WithProviders(d.ProviderQueueURL)
}

// Lifecycle ends jobs and promotes backlogs.
func (d Deps) Lifecycle() *lifecycle.Ender {
	return &lifecycle.Ender{Store: d.Store(), Queue: d.JobQueue(), Clock: d.Clock, Log: d.Log, Metrics: d.Metrics}
}

// Authenticator resolves API tokens. It remembers each token and workspace
// it reads for up to auth.MaxCacheAge, for the life of the function instance:
// most requests then read neither.
func (d Deps) Authenticator() auth.Authenticator {
	return auth.Authenticator{Dir: auth.NewCache(d.Store(), d.Clock)}
}

// Jobs builds the jobs function's handler.
func Jobs(d Deps) (http.Handler, error) {
	err := Require(map[string]string{"TABLE_NAME": d.Table, "JOBS_QUEUE_URL": d.JobsQueueURL, "RESULTS_BUCKET": d.ResultsBucket})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Requests)
	st := d.Store()
	h := &httpapi.Jobs{Auth: d.Authenticator(), Jobs: st, Results: d.ResultLinks(), Cancel: d.Lifecycle(), Deliveries: st}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}

// Usage builds the usage function's handler.
func Usage(d Deps) (http.Handler, error) {
	if err := Require(map[string]string{"TABLE_NAME": d.Table}); err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Requests)
	h := &httpapi.Usage{Auth: d.Authenticator(), Ledger: d.Store(), Clock: d.Clock}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}

// Assets builds the assets function's handler.
func Assets(d Deps) (http.Handler, error) {
	if err := Require(map[string]string{"TABLE_NAME": d.Table, "ASSETS_BUCKET": d.AssetsBucket}); err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Requests)
	h := &httpapi.Assets{Auth: d.Authenticator(), Assets: d.Store(), Blobs: d.Blobs(), Clock: d.Clock, BaseURL: d.BaseURL}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}

// OpenAPI builds the handler of the public OpenAPI document, built before
// deploy (package published).
func OpenAPI(d Deps) (http.Handler, error) {
	build := func(baseURL string) ([]byte, error) { return published.Document(baseURL), nil }
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

// Notifier builds the handler of the table's stream: it starts the webhook
// delivery of each job that ended with one.
func Notifier(d Deps) (StreamHandler, error) {
	err := Require(map[string]string{"TABLE_NAME": d.Table, "DELIVERIES_QUEUE_URL": d.DeliveriesQueueURL, "DELIVERIES_DLQ_URL": d.DeliveriesDLQURL})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Events)
	n := &webhook.Notifier{
		Store: d.Store(), Queue: queue.NewDeliveries(d.Queues(), d.DeliveriesQueueURL, d.DeliveriesDLQURL),
		Clock: d.Clock, Log: d.Log,
	}
	return WithMargin(n.HandleStream), nil
}

// Sweeper builds the sweeper function's handler of its schedule.
func Sweeper(d Deps) (ScheduleHandler, error) {
	err := Require(map[string]string{"TABLE_NAME": d.Table, "JOBS_QUEUE_URL": d.JobsQueueURL, "JOBS_DLQ_URL": d.JobsDLQURL})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Events)
	q := d.JobQueue()
	s := &sweeper.Sweeper{
		Store:     d.Store(),
		Lifecycle: d.Lifecycle(),
		Queue:     q,
		Dead: queue.DeadLetterQueues{queue.NewDeadLetters(d.Queues(), d.JobsDLQURL),
			queue.NewDeadLetters(d.Queues(), d.LightJobsDLQURL)},
		Clock:        d.Clock,
		Log:          d.Log,
		Deadline:     sweeper.DefaultDeadline,
		RequeueAfter: sweeper.DefaultRequeueAfter,
		Lease:        d.Store(),
		LeaseFor:     sweeper.DefaultLeaseFor,
	}
	if d.DeliveriesQueueURL != "" { // re-sends overdue webhook attempts too
		s.Deliveries = d.Store()
		s.DeliveryQueue = queue.NewDeliveries(d.Queues(), d.DeliveriesQueueURL, d.DeliveriesDLQURL)
	}
	if d.RequeueAfter > 0 {
		s.RequeueAfter = d.RequeueAfter
	}
	return func(ctx context.Context, e events.EventBridgeEvent) error {
		ctx, cancel := fault.Reserve(ctx, EventMargin)
		defer cancel()
		return s.Handle(ctx, e)
	}, nil
}

// EventMargin is what an event handler keeps of its time, before the
// invocation's deadline, to report what it could not do (the worker's last
// writes take at most worker.CleanupTimeout of it): a message whose work
// ran out of time is reported failed, never abandoned with the batch.
const EventMargin = 3 * time.Second

// WithMargin runs an SQS or stream handler under a context that ends
// EventMargin before the invocation's deadline (fault.Reserve).
func WithMargin[E, R any](h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		ctx, cancel := fault.Reserve(ctx, EventMargin)
		defer cancel()
		return h(ctx, e)
	}
}
