// Package devstack sets the local stack up the way template.yaml sets AWS
// up: the table, the queues, the buckets, every function's handler built
// with the Environment the template gives it, and a demo workspace to try
// it with. The runner, `make invoke` and the
// benchmarks share it.
package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/app"
	"genjobs/internal/app/assetsfn"
	"genjobs/internal/app/callbacksfn"
	"genjobs/internal/app/consolefn"
	"genjobs/internal/app/delivererfn"
	"genjobs/internal/app/generatefn"
	"genjobs/internal/app/jobsfn"
	"genjobs/internal/app/jwksfn"
	"genjobs/internal/app/mcpfn"
	"genjobs/internal/app/notfoundfn"
	"genjobs/internal/app/notifierfn"
	"genjobs/internal/app/oauthfn"
	"genjobs/internal/app/openapifn"
	"genjobs/internal/app/providerfn"
	"genjobs/internal/app/stripewebhookfn"
	"genjobs/internal/app/stylesfn"
	"genjobs/internal/app/sweeperfn"
	"genjobs/internal/app/usagefn"
	"genjobs/internal/app/workerfn"
	"genjobs/internal/auth"
	"genjobs/internal/awsclient"
	"genjobs/internal/billing"
	"genjobs/internal/blob"
	"genjobs/internal/cognito"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/tokensdb"
)

// Local resource names.
const (
	Table           = "genjobs"
	JobsQueue       = "genjobs-jobs"
	DeliveriesQueue = "genjobs-deliveries"
	ResultsBucket   = "genjobs-results"
	AssetsBucket    = "genjobs-assets"
)

// The demo workspace (docs/local-stack.md, "What make run does").
const (
	DemoWorkspace = "ws_demo"
	demoBalance   = 25 * billing.USD
)

// Functions maps each directory under functions/ to the builder its main.go
// passes to app.Start (a test checks each main against it). A function's
// logical id in template.yaml is the directory's name in CamelCase followed
// by "Function" (app.FunctionName).
var Functions = map[string]app.Function{
	"generate":      {HTTP: generatefn.Build},
	"jobs":          {HTTP: jobsfn.Build},
	"usage":         {HTTP: usagefn.Build},
	"styles":        {HTTP: stylesfn.Build},
	"jwks":          {HTTP: jwksfn.Build},
	"oauth":         {HTTP: oauthfn.Build},
	"deliverer":     {SQS: delivererfn.Build},
	"notifier":      {Stream: notifierfn.Build},
	"assets":        {HTTP: assetsfn.Build},
	"openapi":       {HTTP: openapifn.Build},
	"notfound":      {HTTP: notfoundfn.Build},
	"worker":        {SQS: workerfn.Build},
	"sweeper":       {Schedule: sweeperfn.Build},
	"provider":      {SQS: providerfn.Build},
	"callbacks":     {HTTP: callbacksfn.Build},
	"mcp":           {HTTP: mcpfn.Build},
	"lightworker":   {SQS: workerfn.Build},
	"console":       {HTTP: consolefn.Build},
	"stripewebhook": {HTTP: stripewebhookfn.Build},
}

// Stack is the local stack: the emulators' clients and the names of the
// resources template.yaml would create.
type Stack struct {
	DynamoDB *dynamodb.Client
	Streams  *dynamodbstreams.Client // the table's stream, on DynamoDB's endpoint
	SQS      *sqs.Client
	S3       *s3.Client
	// KMS and SecretsManager are moto's, at MotoEndpoint (UseMoto sets
	// them all).
	KMS            *kms.Client
	SecretsManager *secretsmanager.Client
	MotoEndpoint   string
	// FunctionAPIOptions are added to every AWS client the functions build
	// from FunctionConfig (the bench meters their calls with them).
	FunctionAPIOptions []func(*middleware.Stack) error
	// Secrets are the provider secrets Provision loads (LoadSecrets).
	Secrets ProviderSecrets
	// Mail gets the password reset codes moto answers instead of
	// emailing them (mailbox.go).
	Mail *Mailbox
	// Pool is the console's Cognito user pool in moto (ProvisionConsole),
	// and StripeAPIBase the Stripe test double the console calls
	// (ServeStripe); empty, the console's Stripe calls go to api.stripe.com
	// and fail without keys.
	Pool          cognito.Pool
	StripeAPIBase string

	Table, JobsQueue, DeliveriesQueue, ResultsBucket, AssetsBucket string
	BaseURL                                                        string // the API's address

	// Set by Provision.
	JobsQueueURL, JobsDLQURL             string
	DeliveriesQueueURL, DeliveriesDLQURL string
	// Queues are the URLs of the template's other queues (a stream
	// mapping's on-failure destination, ...) by logical id, set by
	// ProvisionQueues.
	Queues map[string]string
	// ProviderRoutes is the value of the template's ProviderRoutes
	// parameter: make run reads it from the file PROVIDER_ROUTES_FILE names.
	ProviderRoutes string
	// Env is added to every function's environment over the template's,
	// as `sam local --env-vars` does: tests shorten the sweeper's and the
	// worker's timings with it (SWEEPER_REQUEUE_AFTER, WORKER_LEASE).
	Env map[string]string
	// AllowPrivateDestinations is the template's AllowPrivateDestinations
	// here: true (New's default) so that a receiver on 127.0.0.1 works;
	// false refuses private destinations exactly as AWS does by default
	// (ALLOW_PRIVATE_DESTINATIONS=false make run).
	AllowPrivateDestinations bool
	// AppURLFromRequest leaves the template's AppUrl empty, its default in
	// AWS: the functions then make the web application's address from each
	// request's API domain (https://{domain}/app). false (New's) gives
	// them BaseURL + AppPath, the http:// address `make run` serves.
	AppURLFromRequest bool
}

// New returns the stack of the usual local names on the given clients; the
// streams client is DynamoDB Local's, on the DynamoDB client's endpoint.
func New(db *dynamodb.Client, q *sqs.Client, s *s3.Client, baseURL string) *Stack {
	st := &Stack{DynamoDB: db, SQS: q, S3: s, BaseURL: baseURL,
		Table: Table, JobsQueue: JobsQueue, DeliveriesQueue: DeliveriesQueue, ResultsBucket: ResultsBucket,
		AssetsBucket: AssetsBucket, AllowPrivateDestinations: true, Mail: &Mailbox{}}
	if ep := db.Options().BaseEndpoint; ep != nil {
		st.Streams = emulator.DynamoDBStreamsClient(*ep)
	}
	return st
}

// Provision creates the table, the queues, the buckets and (with moto) the
// webhook signing key unless they exist, and loads the provider secrets.
func (s *Stack) Provision(ctx context.Context) error {
	if err := schema.CreateTable(ctx, s.DynamoDB, s.Table); err != nil {
		return err
	}
	var err error
	if s.JobsQueueURL, s.JobsDLQURL, err = queue.Create(ctx, s.SQS, s.JobsQueue); err != nil {
		return err
	}
	if s.DeliveriesQueueURL, s.DeliveriesDLQURL, err = queue.CreateDeliveries(ctx, s.SQS, s.DeliveriesQueue); err != nil {
		return err
	}
	if err := blob.CreateBuckets(ctx, s.S3, s.ResultsBucket, s.AssetsBucket); err != nil {
		return err
	}
	if s.KMS != nil {
		if err := s.ProvisionSigningKey(ctx); err != nil {
			return err
		}
		if err := s.ProvisionConsole(ctx); err != nil {
			return err
		}
	}
	return s.LoadSecrets(ctx)
}

// ProvisionQueues creates the template's queues other than Provision's (the
// jobs and deliveries queues and their dead-letter queues) unless they exist, with their
// VisibilityTimeout, FifoQueue and RedrivePolicy, each named after the table
// and its logical id (genjobs-notifier-dlq for NotifierDLQ), and keeps
// their URLs in Queues.
func (s *Stack) ProvisionQueues(ctx context.Context, tpl *sam.Template) error {
	if s.Queues == nil {
		s.Queues = map[string]string{}
	}
	var create func(id string) (string, error)
	create = func(id string) (string, error) {
		if url, ok := s.provisioned(id); ok {
			if url == "" {
				return "", fmt.Errorf("devstack: Provision makes %s; call it before ProvisionQueues", id)
			}
			return url, nil
		}
		if url, ok := s.Queues[id]; ok {
			return url, nil
		}
		q, err := tpl.Queue(id)
		if err != nil {
			return "", err
		}
		attrs := map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(q.VisibilityTimeout)}
		name := s.Table + "-" + kebab(id)
		if q.FIFO {
			name += ".fifo"
			attrs[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
		}
		if rp := q.RedrivePolicy; rp != nil {
			dlq, err := create(rp.DeadLetterQueue)
			if err != nil {
				return "", err
			}
			arn, err := triggers.QueueARN(ctx, s.SQS, dlq)
			if err != nil {
				return "", err
			}
			b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arn, "maxReceiveCount": rp.MaxReceiveCount})
			attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = string(b)
		}
		out, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return "", fmt.Errorf("create queue %s for %s: %w", name, id, err)
		}
		s.Queues[id] = aws.ToString(out.QueueUrl)
		return s.Queues[id], nil
	}
	for _, id := range tpl.Queues() {
		if _, err := create(id); err != nil {
			return err
		}
	}
	return nil
}

// Reprovision creates again whatever of the table, queues and buckets is
// missing, as after an emulator's restart (fauxqs keeps nothing), without
// writing s's fields, which running handlers and triggers read. Queue URLs
// are made of the endpoint and the name, so they come back the same; if one
// did not, the running stack would send to a queue that is gone, and that
// is an error.
func (s *Stack) Reprovision(ctx context.Context, tpl *sam.Template) error {
	again := *s
	again.Queues = nil
	if err := again.Provision(ctx); err != nil {
		return err
	}
	if err := again.ProvisionQueues(ctx, tpl); err != nil {
		return err
	}
	was := map[string]string{"JobsQueue": s.JobsQueueURL, "JobsDLQ": s.JobsDLQURL,
		"DeliveriesQueue": s.DeliveriesQueueURL, "DeliveriesDLQ": s.DeliveriesDLQURL}
	for id, url := range s.Queues {
		was[id] = url
	}
	for id, url := range was {
		if now, _ := again.QueueURL(id); now != url {
			return fmt.Errorf("queue %s came back as %s, not %s: restart the stack", id, now, url)
		}
	}
	return nil
}

// ResendDeliveries sends again the message of every webhook delivery with an
// attempt due, visible when that attempt is: fauxqs keeps its messages in
// memory only, so a restart of it (or of the stack) would otherwise leave
// those webhooks unsent. A message that was not lost becomes a duplicate,
// which the deliverer drops (its attempt number is no longer due, or its
// claim is taken).
func (s *Stack) ResendDeliveries(ctx context.Context, now time.Time) (int, error) {
	pending, err := deliveriesdb.New(store.New(s.DynamoDB, s.Table)).PendingDeliveries(ctx)
	if err != nil {
		return 0, err
	}
	q := queue.NewDeliveries(s.SQS, s.DeliveriesQueueURL, s.DeliveriesDLQURL)
	for i, d := range pending {
		if err := q.Schedule(ctx, d.JobID, d.Due(), d.NextAt.Sub(now)); err != nil {
			return i, err
		}
	}
	return len(pending), nil
}

// kebab turns a logical id into a queue name's part: NotifierDLQ ->
// notifier-dlq.
func kebab(id string) string {
	r := []rune(id)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (!unicode.IsUpper(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// StreamARN is the latest stream of a table of the template, by logical id
// (DescribeTable's LatestStreamArn).
func (s *Stack) StreamARN(ctx context.Context, id string) (string, error) {
	if id != "Table" {
		return "", fmt.Errorf("the local stack has no table for %s", id)
	}
	out, err := s.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Table)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", s.Table, err)
	}
	if out.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("table %s has no stream", s.Table)
	}
	return *out.Table.LatestStreamArn, nil
}

// TriggerOptions are the runner's options on this stack: its queues and
// its table's stream. Callers add the rest (Log, ScheduleEvery, ...).
func (s *Stack) TriggerOptions() triggers.Options {
	return triggers.Options{SQS: s.SQS, QueueURL: s.QueueURL, Streams: s.Streams, StreamARN: s.StreamARN}
}

// Resolve is what template.yaml's resources and parameters stand for
// locally: the values its functions' Environment refers to.
func (s *Stack) Resolve() map[string]string {
	out := map[string]string{}
	for id, url := range s.Queues {
		out[id] = url
	}
	for k, v := range map[string]string{
		"Table":           s.Table,
		"JobsQueue":       s.JobsQueueURL,
		"JobsDLQ":         s.JobsDLQURL,
		"DeliveriesQueue": s.DeliveriesQueueURL,
		"DeliveriesDLQ":   s.DeliveriesDLQURL,
		// moto's KMS, by alias (ProvisionSigningKey).
		"WebhookSigningKey.Arn":        s.SigningKeyAlias(),
		"PreviousWebhookSigningKeyArn": "",
		"OAuthSigningKey.Arn":          s.OAuthKeyAlias(),
		"ResultsBucket":                s.ResultsBucket,
		"AssetsBucket":                 s.AssetsBucket,
		"BaseUrl":                      s.BaseURL,
		"AllowPrivateDestinations":     strconv.FormatBool(s.AllowPrivateDestinations),
		"AppUrl":                       s.appURL(),
		// No concurrency quota here: both worker lanes, as on a grown account.
		"AccountConcurrency":    "1000",
		"ProviderRoutes":        s.ProviderRoutes,
		"ConsoleUserPool":       s.Pool.PoolID,
		"ConsoleUserPoolClient": s.Pool.ClientID,
		// The table's name stands for the stack's (SecretsPrefix).
		"AWS::StackName": s.Table,
	} {
		out[k] = v
	}
	return out
}

// appURL is the template's AppUrl here (AppURLFromRequest).
func (s *Stack) appURL() string {
	if s.AppURLFromRequest {
		return ""
	}
	return s.BaseURL + AppPath
}

// QueueURL is the local URL of a queue of the template, by logical id.
func (s *Stack) QueueURL(id string) (string, error) {
	if url, ok := s.provisioned(id); ok {
		return url, nil
	}
	if url, ok := s.Queues[id]; ok {
		return url, nil
	}
	return "", fmt.Errorf("the local stack has no queue for %s (devstack.Provision and ProvisionQueues create them)", id)
}

// provisioned is the URL of a queue Provision makes, by logical id.
func (s *Stack) provisioned(id string) (string, bool) {
	switch id {
	case "JobsQueue":
		return s.JobsQueueURL, true
	case "JobsDLQ":
		return s.JobsDLQURL, true
	case "DeliveriesQueue":
		return s.DeliveriesQueueURL, true
	case "DeliveriesDLQ":
		return s.DeliveriesDLQURL, true
	}
	return "", false
}

// Functions builds the handler of every function of tpl, as Lambda would at
// init, each with the Environment the template gives it: no function is
// listed here: the template and Functions decide. A function without
// events is deployed but nothing invokes it (a function whose routes come
// later): there is nothing to play, so it is not built.
func (s *Stack) Functions(tpl *sam.Template, log *slog.Logger) (map[string]triggers.Handlers, error) {
	out := map[string]triggers.Handlers{}
	for _, f := range tpl.Functions() {
		if len(f.Events) == 0 {
			continue
		}
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
	for k, v := range s.localEnv() {
		env[k] = v
	}
	for k, v := range s.Env {
		env[k] = v
	}
	d, err := app.Config(func(k string) string { return env[k] })
	if err != nil {
		return triggers.Handlers{}, fmt.Errorf("%s: %w", id, err)
	}
	d.AWS, d.Log = s.FunctionConfig(), log
	fn, ok := Functions[app.FunctionName(id)]
	if !ok {
		return triggers.Handlers{}, fmt.Errorf("%s: no builder in devstack.Functions for functions/%s", id, app.FunctionName(id))
	}
	built, err := fn.Handler(d)
	if err != nil {
		return triggers.Handlers{}, fmt.Errorf("%s: %w", id, err)
	}
	h := triggers.Handlers{SQS: built.SQS, Schedule: built.Schedule, Stream: built.Stream}
	if built.HTTP != nil {
		h.HTTP = httpapi.LambdaHandler(log, built.HTTP)
	}
	return h, nil
}

// FunctionConfig is the AWS configuration the functions build their own
// clients from, as they do in Lambda: its endpoints are the stack's
// emulators, DynamoDB Local, fauxqs (SQS and S3) and moto (KMS, Secrets
// Manager and Cognito). Without moto (no UseMoto), KMS, Secrets Manager and
// Cognito calls go to a closed port on loopback and fail: never to AWS.
func (s *Stack) FunctionConfig() aws.Config {
	moto := s.MotoEndpoint
	if moto == "" {
		moto = "http://127.0.0.1:1"
	}
	cfg := emulator.FunctionConfig(awsclient.Endpoints{
		"DynamoDB": aws.ToString(s.DynamoDB.Options().BaseEndpoint),
		"SQS":      aws.ToString(s.SQS.Options().BaseEndpoint),
		"S3":       aws.ToString(s.S3.Options().BaseEndpoint),
		"KMS":      moto, "Secrets Manager": moto, "Cognito Identity Provider": moto,
	})
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), s.FunctionAPIOptions...)
	if s.Mail != nil {
		cfg.APIOptions = append(cfg.APIOptions, s.Mail.apiOption)
	}
	return cfg
}

// SeedDemo makes sure the demo workspace exists (created with API access),
// has had its 25 USD top-up (once: the payment id is fixed) and a token, and returns the token. The token is kept in tokenFile so that
// every run prints the same one.
func SeedDemo(ctx context.Context, st *store.Store, tokenFile string) (string, error) {
	now := time.Now()
	s := accountsdb.New(st)
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
	if err := seedStyles(ctx, st, now); err != nil { // and the demo's styles (styles.go)
		return "", err
	}
	token, err := readToken(tokenFile)
	if err != nil {
		return "", err
	}
	if token == "" {
		token, _ = auth.NewToken()
	}
	t, err := tokensdb.New(st).TokenByHash(ctx, auth.Hash(token))
	switch {
	case errors.Is(err, auth.ErrNotFound):
		err = tokensdb.New(st).CreateToken(ctx, auth.Token{
			ID: auth.NewID("tok_"), WorkspaceID: DemoWorkspace, Name: "demo",
			Hash: auth.Hash(token), Prefix: auth.Prefix(token), CreatedAt: now,
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
		return SeedDemo(ctx, st, tokenFile)
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
