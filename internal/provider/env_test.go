package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/app/providerwire"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/blob"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/callbacks"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/job"
	"genjobs/internal/lifecycle"
	"genjobs/internal/netguard"
	"genjobs/internal/provider"
	"genjobs/internal/provider/providertest"
	"genjobs/internal/queue"
	"genjobs/internal/queue/providerqueue"
	"genjobs/internal/secrets"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/slotsdb"
	"genjobs/internal/store/submissionsdb"
	"genjobs/internal/testenv"
	"genjobs/internal/testenv/timeline"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const ws = "ws_p"

// env is the local stack (DynamoDB Local, fauxqs' SQS and S3) with the
// provider steps, the callback route on 127.0.0.1 (through the Lambda
// adapter) and fakes of the providers.
type env struct {
	t       testing.TB
	ctx     context.Context
	store   *submissionsdb.DB
	s3      *s3.Client
	blobs   *blob.Store
	results string
	sqs     *sqs.Client
	pq      string // the provider queue
	jq      string // the jobs queue
	clock   *clock.Fixed
	life    *lifecycle.Ender
	runner  *provider.Runner
	cb      *provider.Callbacks
	baseURL string // the callback route's server
	rep     *providertest.Replicate
	fal     *providertest.Fal
	cog     *providertest.Cog
	files   *providertest.Files
	cat     *catalog.Catalog
	logs    *syncBuffer
	trace   *timeline.Timeline // BENCH_TRACE: the AWS calls and HTTP requests of a timed iteration
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newEnv builds the stack; routes gives the routes document, which may
// name e's fakes.
func newEnv(t testing.TB, routes func(e *env) string) *env {
	t.Helper()
	ctx := context.Background()
	tr := &timeline.Timeline{}
	db := testenv.DynamoDB(t)
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.APIOptions = append(slices.Clone(o.APIOptions), tr.Middleware) })
	table := testenv.UniqueName(t, "prov")
	if err := schema.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	st := submissionsdb.New(store.New(db, table))
	now := time.Now().UTC()
	if err := accountsdb.New(st.Store).CreateWorkspace(ctx, auth.Workspace{ID: ws, MaxConcurrent: 40, MaxRunning: 20, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := accountsdb.New(st.Store).TopUp(ctx, ws, "seed", 100*billing.USD, now); err != nil {
		t.Fatal(err)
	}
	sq := testenv.SQS(t)
	sq = sqs.New(sq.Options(), func(o *sqs.Options) { o.APIOptions = append(slices.Clone(o.APIOptions), tr.Middleware) })
	pq, _, err := providerqueue.Create(ctx, sq, testenv.UniqueName(t, "prov"))
	if err != nil {
		t.Fatal(err)
	}
	jq, _, err := queue.Create(ctx, sq, testenv.UniqueName(t, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	s3c := testenv.S3(t)
	s3c = s3.New(s3c.Options(), func(o *s3.Options) { o.APIOptions = append(slices.Clone(o.APIOptions), tr.Middleware) })
	results := testenv.NewBucket(t) // its clean-up fails the test if an upload was left open
	e := &env{t: t, ctx: ctx, store: st, s3: s3c, results: results, blobs: blob.New(s3c, results, testenv.NewBucket(t)),
		sqs: sq, pq: pq, jq: jq, clock: &clock.Fixed{T: now}, logs: &syncBuffer{}, trace: tr}
	e.rep = providertest.NewReplicate(t)
	e.fal = providertest.NewFal(t)
	e.cog = providertest.NewCog(t, "/image/vendor-b/model-e-4")
	e.files = providertest.NewFiles(t)
	if e.cat, err = catalog.New(); err != nil {
		t.Fatal(err)
	}
	rs, err := provider.ParseRoutes(routes(e), e.cat)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	jobsQueue := queue.NewJobSender(sq, jq).WithProviders(pq)
	e.life = &lifecycle.Ender{Store: st, Queue: jobsQueue, Clock: e.clock, Log: log}
	// The providers' secrets in moto's Secrets Manager, read as the
	// functions read them.
	sm := testenv.SecretsManager(t)
	prefix := testenv.UniqueName(t, "stack") + "/providers/"
	for name, value := range map[string]string{
		"replicate": fmt.Sprintf(`{"token": %q, "webhook_secret": %q}`, e.rep.Token, e.rep.WebhookSecret),
		"cog":       `{"webhook_token": "cog-webhook-token"}`,
		"fal":       fmt.Sprintf(`{"token": %q}`, e.fal.Key),
	} {
		if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(prefix + name), SecretString: aws.String(value)}); err != nil {
			t.Fatal(err)
		}
	}
	sec := providerwire.SecretStore{S: secrets.New(sm, prefix)}
	timings := provider.DefaultTimings
	timings.FirstPoll, timings.MaxPoll, timings.RetryBase = 0, 0, 0
	timings.StepFor, timings.InFlight = time.Minute, 30*time.Second
	timings.MaxOutputBytes = 1 << 20
	guard := &netguard.Guard{AllowPrivate: true}
	// The routes' clients as the functions build them, each reaching its
	// own route's server.
	clients := providerwire.RouteClients(rs, http.DefaultTransport, guard.Transport(), tr.Transport, nil)
	e.runner = &provider.Runner{
		Store: st, Ender: e.life, Queue: providerqueue.New(sq, pq), Blobs: providerwire.Blobs{Store: e.blobs}, Assets: assetsdb.New(st.Store),
		Secrets: sec, Clients: clients, Routes: rs, Catalog: e.cat,
		Fetch: tr.Transport(guard.Transport()), Trusted: tr.Transport(http.DefaultTransport),
		Clock: e.clock, Log: log, Timings: timings,
	}
	e.cb = &provider.Callbacks{Store: st, Blobs: providerwire.Blobs{Store: e.blobs}, Queue: providerqueue.New(sq, pq),
		Secrets: sec, Clients: clients, Routes: rs, Clock: e.clock, Log: log, MaxOutputBytes: timings.MaxOutputBytes}
	h := &callbacks.Handler{Receiver: e.cb}
	// Served as the callbacks function is in AWS: through API Gateway's
	// event and the Lambda adapter.
	e.baseURL = providertest.Listen(t, lambdatest.Handler(httpapi.Middleware(log, h.Routes()))).URL
	return e
}

// create stores a job of endpoint with request body, marked for its route
// as creation does, and sends its message through the one queue router.
func (e *env) create(endpoint, body string) *job.Job {
	e.t.Helper()
	return e.createRouted(endpoint, body, true)
}

// createRouted is create; with routed false the job ignores the routes and
// goes to the jobs queue, for the in-process worker.
func (e *env) createRouted(endpoint, body string, routed bool) *job.Job {
	e.t.Helper()
	ep, ok := e.cat.ByPath(endpoint)
	if !ok {
		e.t.Fatalf("no endpoint %s", endpoint)
	}
	req, err := ep.Decode([]byte(body), e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	j := &job.Job{ID: job.NewID(e.clock.Now()), WorkspaceID: ws, CreatedAt: e.clock.Now(), Endpoint: endpoint,
		Request: req.JSON(), BaseURL: e.baseURL, Price: 40_000}
	if rt, ok := e.runner.Routes.For(endpoint); ok && routed {
		j.Provider, j.Deadline = rt.Provider, rt.Deadline()
	}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		e.t.Fatal(err)
	}
	if err := e.life.Queue.Enqueue(e.ctx, j); err != nil {
		e.t.Fatal(err)
	}
	return j
}

// step takes one message of the provider queue (waiting up to 3 s for a
// delayed one) and runs it; false when none came.
func (e *env) step() bool {
	e.t.Helper()
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.pq), MaxNumberOfMessages: 1, WaitTimeSeconds: 3})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(out.Messages) == 0 {
		return false
	}
	m := out.Messages[0]
	var msg provider.Message
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &msg); err != nil {
		e.t.Fatal(err)
	}
	e.trace.Mark("step "+string(msg.Kind)+" begins", time.Now())
	defer func() { e.trace.Mark("step "+string(msg.Kind)+" deleted", time.Now()) }()
	if err := e.runner.Step(e.ctx, msg); err != nil {
		e.t.Fatalf("step: %v\nlogs:\n%s", err, e.logs.String())
	}
	if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.pq), ReceiptHandle: m.ReceiptHandle}); err != nil {
		e.t.Fatal(err)
	}
	return true
}

// steps runs up to n steps or until the job has ended.
func (e *env) steps(id string, n int) *job.Job {
	e.t.Helper()
	for i := 0; i < n; i++ {
		if j := e.job(id); j.Status.Terminal() {
			return j
		}
		if !e.step() {
			break
		}
	}
	return e.job(id)
}

// drain runs every message left (bounded), e.g. the cancellation a job's
// end sends.
func (e *env) drain() {
	e.t.Helper()
	for i := 0; i < 20 && e.stepQuick(); i++ {
	}
}

func (e *env) stepQuick() bool {
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.pq), MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
	if err != nil || len(out.Messages) == 0 {
		return false
	}
	var msg provider.Message
	_ = json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &msg)
	if err := e.runner.Step(e.ctx, msg); err != nil {
		e.t.Fatalf("step: %v", err)
	}
	_, _ = e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.pq), ReceiptHandle: out.Messages[0].ReceiptHandle})
	return true
}

func (e *env) job(id string) *job.Job {
	e.t.Helper()
	j, err := e.store.Job(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// result downloads a completed job's outputs from the results bucket.
func (e *env) result(j *job.Job) [][]byte {
	e.t.Helper()
	var out [][]byte
	for _, k := range j.Outputs {
		u, err := e.blobs.ResultURL(e.ctx, k)
		if err != nil {
			e.t.Fatal(err)
		}
		resp, err := http.Get(u)
		if err != nil {
			e.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			e.t.Fatalf("result %s answered %d", k, resp.StatusCode)
		}
		out = append(out, b)
	}
	return out
}

// objects lists the results bucket's keys under prefix.
func (e *env) objects(prefix string) []string {
	e.t.Helper()
	out, err := e.s3.ListObjectsV2(e.ctx, &s3.ListObjectsV2Input{Bucket: aws.String(e.results), Prefix: aws.String(prefix)})
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// audit checks the workspace's money and slots: the ledger adds up, each
// job's entries match its end, and the slot counters match its jobs.
func (e *env) audit() {
	e.t.Helper()
	a, err := ledgerdb.New(e.store.Store).AuditLedger(e.ctx, ws)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(a.Differences) > 0 || a.Stored != a.Ledger {
		e.t.Errorf("ledger audit: stored %+v, ledger %+v, differences %v", a.Stored, a.Ledger, a.Differences)
	}
	stored, err := slotsdb.New(e.store.Store).StoredSlots(e.ctx, ws)
	if err != nil {
		e.t.Fatal(err)
	}
	counted, err := slotsdb.New(e.store.Store).CountSlots(e.ctx, ws)
	if err != nil {
		e.t.Fatal(err)
	}
	if stored != counted {
		e.t.Errorf("slots: counters %+v, jobs %+v", stored, counted)
	}
}

// charges counts the workspace's charge entries for job id.
func (e *env) charges(id string) int {
	e.t.Helper()
	entries, err := ledgerdb.New(e.store.Store).LedgerEntries(e.ctx, ws)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, en := range entries {
		if en.JobID == id && en.Kind == billing.Charge {
			n++
		}
	}
	return n
}

// kinds takes every message waiting on the provider queue and returns
// their kinds.
func (e *env) kinds() []provider.StepKind {
	e.t.Helper()
	var out []provider.StepKind
	for i := 0; i < 20; i++ {
		res, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.pq), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			return out
		}
		for _, m := range res.Messages {
			var msg provider.Message
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &msg); err != nil {
				e.t.Fatal(err)
			}
			out = append(out, msg.Kind)
			_, _ = e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.pq), ReceiptHandle: m.ReceiptHandle})
		}
	}
	return out
}

// purge drops every message waiting on the provider queue.
func (e *env) purge() { e.t.Helper(); _ = e.kinds() }

// sub reads a job's prediction state.
func (e *env) sub(id string) job.Submission {
	e.t.Helper()
	_, sub, err := e.store.ProviderJob(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return sub
}

// verifyAll checks every workspace's balance against its ledger, as
// `ledger verify --all` of the operator CLI does.
func (e *env) verifyAll() {
	e.t.Helper()
	ids, err := accountsdb.New(e.store.Store).Workspaces(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(ids) == 0 {
		e.t.Fatal("no workspace to verify")
	}
	for _, id := range ids {
		a, err := ledgerdb.New(e.store.Store).AuditLedger(e.ctx, id)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(a.Differences) > 0 {
			e.t.Errorf("ledger verify: workspace %s: %v", id, a.Differences)
		}
	}
}
