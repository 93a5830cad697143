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
	"genjobs/internal/clock"
	"genjobs/internal/metrics"
	"genjobs/internal/netguard"
	"genjobs/internal/webhook"
)

// Deps is what every function is built from: its settings, and the AWS
// configuration its builder makes its own clients from (dynamodbwire.Store,
// sqswire.Client, s3wire.Store, ...), so that each binary links only the
// clients it uses.
type Deps struct {
	Settings

	// AWS is the configuration of every AWS client: in Lambda, read from
	// the environment (awsclient.FromEnv); locally and in tests, the
	// emulators' endpoints (awsclient.Endpoints in its ConfigSources).
	AWS aws.Config

	Clock clock.Clock
	Log   *slog.Logger
	// Metrics writes the function's CloudWatch metrics (EMF lines on
	// standard output); set by Lambda, nil elsewhere.
	Metrics *metrics.Emitter
	// Retries is how the clients retry: set by Function.Handler from the
	// function's kind (awsclient.Requests or Events), never by a builder.
	Retries awsclient.Profile
}

// Settings are what Config reads from the environment, grouped by what they
// configure. Each field's comment names its variable.
type Settings struct {
	Table     string // TABLE_NAME: the one table every function reads and writes
	Queues    Queues
	Buckets   Buckets
	API       API
	Network   Network
	Worker    Worker
	Sweeper   Sweeper
	Webhooks  Webhooks
	Signing   Signing
	Providers Providers
	Console   Console
}

// Queues are the jobs' queues: where a job's message is sent
// (sqswire.JobQueue, by lifecycle.QueueFor's lane) and the dead-letter
// queues the sweeper fails jobs from.
type Queues struct {
	Jobs    string // JOBS_QUEUE_URL: the heavy lane
	JobsDLQ string // JOBS_DLQ_URL
	// LightJobs (LIGHT_JOBS_QUEUE_URL) and LightJobsDLQ (LIGHT_JOBS_DLQ_URL)
	// are the light lane's: empty, light jobs go to the jobs queue.
	LightJobs    string
	LightJobsDLQ string
}

// Buckets are the S3 buckets.
type Buckets struct {
	Results string // RESULTS_BUCKET: the jobs' outputs, handed out as presigned links
	Assets  string // ASSETS_BUCKET: the workspaces' uploaded inputs
}

// API is what the public API says of itself.
type API struct {
	BaseURL string // BASE_URL: the API's public address, without a trailing slash
	// AppURL (APP_URL) is the web application's address, without a
	// trailing slash: share links, avatars and the console's pages. Empty
	// (the template's default), each request's own API domain and /app
	// stand for it (httpapi.AppURL).
	AppURL string
	// PricesJSON (PRICES_JSON) overrides entries of the default price list
	// (prices.Load); empty keeps the defaults.
	PricesJSON string
}

// Network is the policy of the requests the service makes for a client's
// or a provider's URL: webhooks, input fetches, providers' outputs.
type Network struct {
	// AllowPrivate (ALLOW_PRIVATE_DESTINATIONS) lets them reach loopback
	// and private addresses: local development.
	AllowPrivate bool
}

// Guard is the network guard of that policy.
func (n Network) Guard() *netguard.Guard { return &netguard.Guard{AllowPrivate: n.AllowPrivate} }

// Worker configures the worker and the light worker.
type Worker struct {
	// Queue (WORKER_QUEUE_URL) is the queue whose messages the worker runs:
	// the jobs queue or the light one. A failed attempt's message is asked
	// back on it sooner than its visibility timeout.
	Queue string
	// MaxSourcePixels (MAX_SOURCE_PIXELS) makes a worker hand jobs with
	// larger sources to the heavy lane: it makes the light worker. 0: none.
	MaxSourcePixels int
	// LeaseFor (WORKER_LEASE) is how long a worker's claim keeps others out
	// without a heartbeat: a shorter one is for tests of a local stack whose
	// queue loses its messages. 0: worker.DefaultLeaseFor, applied where
	// the worker is built (package app cannot import the worker: it links
	// the engines).
	LeaseFor time.Duration
}

// Sweeper configures the sweeper.
type Sweeper struct {
	// RequeueAfter (SWEEPER_REQUEUE_AFTER) is how long the sweeper lets an
	// untaken job wait before it sends its message again: a shorter one is
	// for tests of a local stack. 0: sweeper.DefaultRequeueAfter, applied
	// where the sweeper is built, as the worker's lease is.
	RequeueAfter time.Duration
}

// Webhooks configures the deliveries of job webhooks.
type Webhooks struct {
	Queue string // DELIVERIES_QUEUE_URL
	DLQ   string // DELIVERIES_DLQ_URL: failed deliveries
	// Schedule (WEBHOOK_SCHEDULE, "5s,5m,...") is the delays between a
	// delivery's attempts: webhook.Schedule unless set, compressed for
	// local use.
	Schedule []time.Duration
}

// Signing names the signing keys in KMS: the webhooks' and the access tokens'.
type Signing struct {
	KeyID string // SIGNING_KEY_ID: a KMS key id, ARN or alias; locally moto's
	// PreviousKeyID (SIGNING_PREVIOUS_KEY_ID) is the key before the last
	// rotation, listed in the JWKS.
	PreviousKeyID string
	// OAuthKeyID (OAUTH_SIGNING_KEY_ID) is the key of their own that signs
	// MCP connections' access tokens (internal/oauthtoken).
	OAuthKeyID string
}

// Providers configures the routed jobs (docs/providers.md).
type Providers struct {
	Queue  string // PROVIDER_QUEUE_URL: the provider queue of routed jobs' steps
	Routes string // PROVIDER_ROUTES: a JSON document, checked at init (by the console at its playground's first run)
	// SecretsPrefix (PROVIDER_SECRETS_PREFIX) is where the providers'
	// secrets are: "{stack name}/providers/" (internal/secrets).
	SecretsPrefix string
}

// Console configures the console (docs/console.md).
type Console struct {
	UserPoolID string // COGNITO_USER_POOL_ID
	ClientID   string // COGNITO_CLIENT_ID: the pool's app client
	// JWKSURL and Issuer (COGNITO_JWKS_URL, COGNITO_ISSUER) are where the
	// pool's keys and issuer are when not AWS's own: the local stack's moto.
	JWKSURL, Issuer string
	// StripeSecretID (STRIPE_SECRET_ID) names the Stripe keys' secret,
	// "{stack name}/stripe"; StripeAPIBase (STRIPE_API_BASE) is Stripe's
	// API address when not api.stripe.com: the local test double.
	StripeSecretID, StripeAPIBase string
}

// Config reads the configuration from getenv, without building clients: it
// checks every value it reads, and applies the defaults it owns.
func Config(getenv func(string) string) (Deps, error) {
	s, err := read(getenv)
	return Deps{Settings: s, Clock: clock.System{}, Log: slog.New(slog.NewJSONHandler(os.Stdout, nil))}, err
}

// read reads the settings, checking every value it reads; it returns what
// it read until an error.
func read(getenv func(string) string) (Settings, error) {
	s := Settings{Webhooks: Webhooks{Schedule: webhook.Schedule}}
	s.Table = getenv("TABLE_NAME")
	s.Queues.Jobs = getenv("JOBS_QUEUE_URL")
	s.Queues.JobsDLQ = getenv("JOBS_DLQ_URL")
	s.Queues.LightJobs = getenv("LIGHT_JOBS_QUEUE_URL")
	s.Queues.LightJobsDLQ = getenv("LIGHT_JOBS_DLQ_URL")
	s.Buckets.Results = getenv("RESULTS_BUCKET")
	s.Buckets.Assets = getenv("ASSETS_BUCKET")
	s.API.BaseURL = strings.TrimSuffix(getenv("BASE_URL"), "/")
	s.API.AppURL = strings.TrimSuffix(getenv("APP_URL"), "/")
	s.API.PricesJSON = getenv("PRICES_JSON")
	s.Worker.Queue = getenv("WORKER_QUEUE_URL")
	s.Webhooks.Queue = getenv("DELIVERIES_QUEUE_URL")
	s.Webhooks.DLQ = getenv("DELIVERIES_DLQ_URL")
	s.Signing.KeyID = getenv("SIGNING_KEY_ID")
	s.Signing.PreviousKeyID = getenv("SIGNING_PREVIOUS_KEY_ID")
	s.Signing.OAuthKeyID = getenv("OAUTH_SIGNING_KEY_ID")
	s.Providers.Queue = getenv("PROVIDER_QUEUE_URL")
	s.Providers.Routes = getenv("PROVIDER_ROUTES")
	s.Providers.SecretsPrefix = getenv("PROVIDER_SECRETS_PREFIX")
	s.Console.UserPoolID = getenv("COGNITO_USER_POOL_ID")
	s.Console.ClientID = getenv("COGNITO_CLIENT_ID")
	s.Console.JWKSURL = getenv("COGNITO_JWKS_URL")
	s.Console.Issuer = getenv("COGNITO_ISSUER")
	s.Console.StripeSecretID = getenv("STRIPE_SECRET_ID")
	s.Console.StripeAPIBase = strings.TrimSuffix(getenv("STRIPE_API_BASE"), "/")
	if v := getenv("ALLOW_PRIVATE_DESTINATIONS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("ALLOW_PRIVATE_DESTINATIONS must be true or false, not %q", v)
		}
		s.Network.AllowPrivate = b
	}
	var err error
	if s.Sweeper.RequeueAfter, err = positiveDuration(getenv, "SWEEPER_REQUEUE_AFTER"); err != nil {
		return s, err
	}
	if s.Worker.LeaseFor, err = positiveDuration(getenv, "WORKER_LEASE"); err != nil {
		return s, err
	}
	if v := getenv("MAX_SOURCE_PIXELS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s, fmt.Errorf("MAX_SOURCE_PIXELS must be a whole number of pixels, not %q", v)
		}
		s.Worker.MaxSourcePixels = n
	}
	if v := getenv("WEBHOOK_SCHEDULE"); v != "" {
		sched, err := webhook.ParseSchedule(v)
		if err != nil {
			return s, fmt.Errorf("WEBHOOK_SCHEDULE: %w", err)
		}
		s.Webhooks.Schedule = sched
	}
	return s, nil
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
