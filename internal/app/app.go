// Package app wires each function: configuration from the environment,
// adapters built once, handlers on top. functions/*/main.go and the local
// runner both build their handlers here, so that what runs locally is what
// runs in Lambda.
//
// This package holds what every function shares (Deps, Function, Start).
// Each function's builder, Build, is in a package of its own named after its
// functions/ directory (internal/app/<name>fn); the adapters several
// builders share are made by packages of constructors, one per AWS client
// (dynamodbwire, sqswire, s3wire, kmswire) and one for the model providers
// (providerwire). A binary links every package its builder imports and runs
// their init, so a function that never sends to SQS imports no package that
// does. docs/architecture.md, "Wiring", follows a job through them.
package app

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"genjobs/internal/awsclient"
	"genjobs/internal/blob/s3url"
	"genjobs/internal/clock"
	"genjobs/internal/metrics"
	"genjobs/internal/webhook"
)

// Deps is what every function is built from: its settings, and the AWS
// configuration its builder makes its own clients from (dynamodbwire.Store,
// sqswire.Client, s3wire.Store, ...), so that each binary links only the
// clients it uses.
type Deps struct {
	// AWS is the configuration of every AWS client: in Lambda, read from
	// the environment (awsclient.FromEnv); locally and in tests, the
	// emulators' endpoints (awsclient.Endpoints in its ConfigSources).
	AWS aws.Config

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
	// WorkerQueueURL (WORKER_QUEUE_URL) is the queue whose messages a
	// worker runs: the jobs queue or the light one. A failed attempt's
	// message is asked back on it sooner than its visibility timeout.
	WorkerQueueURL string
	ResultsBucket  string // RESULTS_BUCKET
	AssetsBucket   string // ASSETS_BUCKET
	BaseURL        string // BASE_URL: the public address of the API
	AppURL         string // APP_URL: the web application's address (styles.go)
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
	// The console (docs/console.md): its Cognito user pool and app client
	// (COGNITO_USER_POOL_ID, COGNITO_CLIENT_ID), where the pool's keys and
	// issuer are when not AWS's own (COGNITO_JWKS_URL, COGNITO_ISSUER: the
	// local stack's moto), the Stripe keys' secret (STRIPE_SECRET_ID,
	// "{stack name}/stripe") and Stripe's API address when not
	// api.stripe.com (STRIPE_API_BASE: the local test double).
	UserPoolID, UserPoolClientID  string
	CognitoJWKSURL, CognitoIssuer string
	StripeSecretID, StripeAPIBase string
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

	// Retries is how the clients retry: set by Function.Handler from the
	// function's kind (awsclient.Requests or Events), never by a builder.
	Retries awsclient.Profile
}

// Config reads the configuration from getenv, without building clients.
func Config(getenv func(string) string) (Deps, error) {
	d := Deps{
		Table:        getenv("TABLE_NAME"),
		JobsQueueURL: getenv("JOBS_QUEUE_URL"),
		JobsDLQURL:   getenv("JOBS_DLQ_URL"),

		LightJobsQueueURL: getenv("LIGHT_JOBS_QUEUE_URL"),
		WorkerQueueURL:    getenv("WORKER_QUEUE_URL"),
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
	d.UserPoolID, d.UserPoolClientID = getenv("COGNITO_USER_POOL_ID"), getenv("COGNITO_CLIENT_ID")
	d.CognitoJWKSURL, d.CognitoIssuer = getenv("COGNITO_JWKS_URL"), getenv("COGNITO_ISSUER")
	d.StripeSecretID, d.StripeAPIBase = getenv("STRIPE_SECRET_ID"), strings.TrimSuffix(getenv("STRIPE_API_BASE"), "/")
	if v := getenv("ALLOW_PRIVATE_DESTINATIONS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return d, fmt.Errorf("ALLOW_PRIVATE_DESTINATIONS must be true or false, not %q", v)
		}
		d.AllowPrivateDestinations = b
	}
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

// FromEnv reads the configuration and the AWS configuration from the
// environment. It builds no client and does no I/O: each builder makes the
// clients its function uses.
func FromEnv() (Deps, error) {
	d, err := Config(os.Getenv)
	if err != nil {
		return d, err
	}
	d.AWS = awsclient.FromEnv(os.Getenv)
	return d, nil
}

// ResultLinks mints result URLs without the S3 client, for the functions
// that only hand them out (package s3url): they link no S3 package.
func (d Deps) ResultLinks() s3url.ResultLinks {
	return s3url.NewResultLinks(s3url.NewPresigner(d.AWS.Credentials, d.AWS.Region, awsclient.Endpoint(d.AWS, "S3")), d.ResultsBucket)
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
