package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"genjobs/internal/app"
	"genjobs/internal/app/assetsfn"
	"genjobs/internal/app/generatefn"
	"genjobs/internal/app/jobsfn"
	"genjobs/internal/app/stylesfn"
	"genjobs/internal/app/usagefn"
	"genjobs/internal/asset"
	"genjobs/internal/auth"
	"genjobs/internal/awsclient"
	"genjobs/internal/billing"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/job"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/style"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The answer of every dependency outage.
const unavailableBody = `{"error":"The service is temporarily unavailable; retry shortly."}`

// lambdaTimeout is the deadline the tests give an invocation, as Lambda
// does: short, so that an outage costs each test little time.
const lambdaTimeout = 2 * time.Second

// stack is a function's dependencies behind fault proxies: DynamoDB Local
// (table) and fauxqs (queues: SQS and S3) reached through testenv.Faults,
// with one workspace and its token. store reaches the table directly, to
// set up and to check what was written.
type stack struct {
	t             *testing.T
	table, queues *testenv.Faults
	store         *store.Store
	d             app.Deps
	token         string
	logs          *logBuffer
}

const funded = 10 * billing.USD

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "faults")
	if err := schema.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, store: store.New(db, table), logs: &logBuffer{}}
	now := time.Now()
	if err := accountsdb.New(s.store).CreateWorkspace(ctx, auth.Workspace{ID: "ws_a", Name: "A", APIEnabled: true,
		MaxConcurrent: 20, MaxRunning: 5, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := accountsdb.New(s.store).TopUp(ctx, "ws_a", "pay_1", funded, now); err != nil {
		t.Fatal(err)
	}
	token, hash := auth.NewToken()
	if err := tokensdb.New(s.store).CreateToken(ctx, auth.Token{ID: "tok_a", WorkspaceID: "ws_a", Hash: hash, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	s.token = token
	sq := testenv.SQS(t)
	jobsURL, jobsDLQ, err := queue.Create(ctx, sq, testenv.UniqueName(t, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	delURL, delDLQ, err := queue.CreateDeliveries(ctx, sq, testenv.UniqueName(t, "del"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := testenv.KMS(t).CreateKey(ctx, &awskms.CreateKeyInput{
		KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatal(err)
	}
	oauthKey, err := testenv.KMS(t).CreateKey(ctx, &awskms.CreateKeyInput{
		KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"TABLE_NAME": table, "JOBS_QUEUE_URL": jobsURL, "JOBS_DLQ_URL": jobsDLQ,
		"DELIVERIES_QUEUE_URL": delURL, "DELIVERIES_DLQ_URL": delDLQ,
		"RESULTS_BUCKET": testenv.NewBucket(t), "ASSETS_BUCKET": testenv.NewBucket(t),
		"BASE_URL": "https://api.test", "APP_URL": "https://app.test", "ALLOW_PRIVATE_DESTINATIONS": "true",
		"SIGNING_KEY_ID": aws.ToString(key.KeyMetadata.Arn), "WEBHOOK_SCHEDULE": "1s,2s",
		"OAUTH_SIGNING_KEY_ID": aws.ToString(oauthKey.KeyMetadata.Arn),
	}
	s.d, err = app.Config(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s.table = testenv.NewFaults(t, testenv.DynamoDBEndpoint())
	s.queues = testenv.NewFaults(t, testenv.SQSEndpoint())
	s.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{
		"DynamoDB": s.table.URL, "SQS": s.queues.URL, "S3": s.queues.URL,
		"KMS": testenv.MotoEndpoint(), "Secrets Manager": testenv.MotoEndpoint(),
	})
	s.d.Log = slog.New(slog.NewJSONHandler(s.logs, nil))
	return s
}

// logBuffer collects a function's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the log lines that have every one of the fragments.
func (b *logBuffer) lines(fragments ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
next:
	for _, l := range strings.Split(b.buf.String(), "\n") {
		for _, f := range fragments {
			if !strings.Contains(l, f) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// build makes an HTTP function's handler as Lambda would (fn is its
// builder).
func (s *stack) build(fn func(app.Deps) (http.Handler, error)) http.Handler {
	s.t.Helper()
	return s.handler(app.Function{HTTP: fn}).HTTP
}

// handler builds f as Lambda does, through Function.Handler: with the
// retries of its kind and, for an event function, its margin.
func (s *stack) handler(f app.Function) app.Handler {
	s.t.Helper()
	h, err := f.Handler(s.d)
	if err != nil {
		s.t.Fatal(err)
	}
	return h
}

// answer is what the client got.
type answer struct {
	StatusCode int
	Headers    http.Header
	Body       string
}

// RequestID is API Gateway's id of the request, which the client sees in
// apigw-requestid and every log line of the request carries.
func (a answer) RequestID() string { return a.Headers.Get("Apigw-Requestid") }

// call invokes h through API Gateway's event and the Lambda adapter
// (lambdatest) under an invocation deadline of timeout, with the
// workspace's token.
func (s *stack) call(h http.Handler, timeout time.Duration, method, path, contentType, body string) answer {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := httptest.NewRequest(method, "https://api.test"+path, strings.NewReader(body)).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+s.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := lambdatest.Serve(h, req)
	return answer{rec.Code, rec.Header(), rec.Body.String()}
}

// want503 checks the answer to an outage: 503, the fixed body, Retry-After.
func want503(t *testing.T, what string, out answer) {
	t.Helper()
	if out.StatusCode != http.StatusServiceUnavailable || out.Body != unavailableBody || out.Headers.Get("Retry-After") != "2" {
		t.Errorf("%s: %d %s, Retry-After %q; want 503 %s, Retry-After 2", what, out.StatusCode, out.Body, out.Headers.Get("Retry-After"), unavailableBody)
	}
}

// queuedJob stores a queued model-e-4 job of ws_a, reserved as a creation
// would, and returns it.
func (s *stack) queuedJob(webhookURL string) *job.Job {
	s.t.Helper()
	now := time.Now()
	j := &job.Job{
		ID: job.NewID(now), WorkspaceID: "ws_a", Status: job.Queued, CreatedAt: now,
		Endpoint: "/generate/image/vendor-b/model-e-4", Request: json.RawMessage(`{"prompt":"a cat","width":64,"height":64}`),
		BaseURL: "https://api.test", WebhookURL: webhookURL, Price: 30_000,
	}
	if err := s.store.CreateJob(context.Background(), j); err != nil {
		s.t.Fatal(err)
	}
	return j
}

func (s *stack) asset() string {
	s.t.Helper()
	id := asset.NewID()
	err := assetsdb.New(s.store).CreateAsset(context.Background(), asset.Asset{ID: id, WorkspaceID: "ws_a", Key: "assets/ws_a/" + id,
		ContentType: asset.PNG, CreatedAt: time.Now()})
	if err != nil {
		s.t.Fatal(err)
	}
	return id
}

func pngBytes(t *testing.T) string {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every HTTP path whose dependency fails answers 503 with Retry-After
// within its deadline, whatever the way the dependency fails, and answers
// normally again once the dependency is back.
func TestEveryPathAnswers503WhenItsDependencyFails(t *testing.T) {
	type call struct{ method, path, contentType, body string }
	cases := []struct {
		name  string
		fn    func(app.Deps) (http.Handler, error)
		req   func(s *stack) call
		queue bool // the fault is on fauxqs (SQS, S3), not the table
		op    string
		where string // a fragment of the failed calls' bodies
		fault testenv.Fault
		after int // the status once the dependency is back
	}{
		{"token lookup", jobsfn.Build, func(*stack) call { return call{"GET", "/jobs", "", ""} },
			false, "GetItem", "TOKEN#", testenv.Unavailable, 200},
		{"workspace lookup", usagefn.Build, func(*stack) call { return call{"GET", "/usage", "", ""} },
			false, "GetItem", `{"S":"WS"}`, testenv.Drop, 200},
		{"creation and its billing transaction", generatefn.Build, func(*stack) call {
			return call{"POST", "/generate/image/vendor-b/model-e-4", "application/json", `{"prompt":"a cat","width":64,"height":64}`}
		}, false, "TransactWriteItems", "", testenv.Throttle, 200},
		{"creation's asset check", generatefn.Build, func(s *stack) call {
			return call{"POST", "/generate/enhance/vendor-a/standard-enhance", "application/json",
				`{"width":128,"height":128,"model":"Standard V2","image_url":"https://api.test/assets/` + s.asset() + `"}`}
		}, false, "GetItem", "ASSET#", testenv.Unavailable, 200},
		{"job", jobsfn.Build, func(s *stack) call { return call{"GET", "/jobs/" + s.queuedJob("").ID, "", ""} },
			false, "GetItem", `{"S":"JOB"}`, testenv.Freeze, 200},
		{"job list", jobsfn.Build, func(*stack) call { return call{"GET", "/jobs?limit=5", "", ""} },
			false, "Query", "", testenv.Unavailable, 200},
		{"cancellation", jobsfn.Build, func(s *stack) call { return call{"DELETE", "/jobs/" + s.queuedJob("").ID, "", ""} },
			false, "TransactWriteItems", "", testenv.Unavailable, 200},
		{"deliveries", jobsfn.Build, func(s *stack) call { return call{"GET", "/jobs/" + s.queuedJob("").ID + "/deliveries", "", ""} },
			false, "GetItem", "WEBHOOK", testenv.Unavailable, 200},
		{"usage", usagefn.Build, func(*stack) call { return call{"GET", "/usage?days=3", "", ""} },
			false, "Query", "", testenv.Unavailable, 200},
		{"styles", stylesfn.Build, func(*stack) call { return call{"GET", "/styles?filter=all", "", ""} },
			false, "Query", "", testenv.Unavailable, 200},
		{"share link", stylesfn.Build, func(s *stack) call {
			st := style.Style{ID: "sty_a", Title: "A", Prompt: "p", Models: []string{"model-e-4"}, CreatedAt: time.Now(),
				WorkspaceID: "ws_a", Owner: style.APIOwner("ws_a")}
			if err := stylesdb.New(s.store).CreateStyle(context.Background(), st); err != nil {
				s.t.Fatal(err)
			}
			return call{"GET", "/styles/sty_a/share/link", "", ""}
		}, false, "TransactWriteItems", "", testenv.Unavailable, 201},
		{"asset upload to S3", assetsfn.Build, func(s *stack) call { return call{"POST", "/assets", "image/png", pngBytes(s.t)} },
			true, "PutObject", "", testenv.Throttle, 201},
		{"presigned upload's record", assetsfn.Build, func(*stack) call {
			return call{"POST", "/assets/uploads", "application/json", `{"content_type":"image/png","size":1000}`}
		}, false, "PutItem", "ASSET#", testenv.Unavailable, 201},
		{"asset download", assetsfn.Build, func(s *stack) call { return call{"GET", "/assets/" + s.asset(), "", ""} },
			false, "GetItem", "ASSET#", testenv.Unavailable, 302},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t)
			h := s.build(c.fn)
			req := c.req(s)
			faults := s.table
			if c.queue {
				faults = s.queues
			}
			faults.SetIf(c.op, c.where, c.fault)
			out := s.call(h, lambdaTimeout, req.method, req.path, req.contentType, req.body)
			want503(t, "during the outage", out)
			if faults.Failed(c.op) == 0 {
				t.Errorf("no %s call was failed: the 503 came from elsewhere", c.op)
			}
			if len(s.logs.lines(`"request_id":"`+out.RequestID()+`"`, "dependency unavailable", `"code":"`)) == 0 {
				t.Errorf("no log line with the request id and the error code:\n%s", s.logs.lines())
			}
			faults.Clear()
			if out := s.call(h, lambdaTimeout, req.method, req.path, req.contentType, req.body); out.StatusCode != c.after {
				t.Errorf("after the outage: %d %s; want %d", out.StatusCode, out.Body, c.after)
			}
		})
	}
}

// A creation whose transaction is throttled is retried as the Requests
// profile says, then answered 503; nothing of it is written.
func TestAThrottledCreationWritesNothing(t *testing.T) {
	s := newStack(t)
	h := s.build(generatefn.Build)
	s.table.Set("TransactWriteItems", testenv.Throttle)
	// Time enough for every attempt: the 503 comes from the retries
	// running out, with DynamoDB's own code in the log.
	out := s.call(h, 8*time.Second, "POST", "/generate/image/vendor-b/model-e-4", "application/json",
		`{"prompt":"a cat","width":64,"height":64}`)
	want503(t, "throttled", out)
	if n := s.table.Failed("TransactWriteItems"); n != 3 {
		t.Errorf("%d transactions sent; want the profile's 3 attempts", n)
	}
	if lines := s.logs.lines(`"request_id":"`+out.RequestID()+`"`, `"code":"ThrottlingException"`); len(lines) != 1 {
		t.Errorf("want one log line with the request id and ThrottlingException; got\n%s", s.logs.lines())
	}
	ctx := context.Background()
	page, err := s.store.ListJobs(ctx, "ws_a", job.Query{Limit: 10})
	if err != nil || len(page.Jobs) != 0 {
		t.Errorf("jobs after a refused creation: %d, %v; want none", len(page.Jobs), err)
	}
	if b, err := accountsdb.New(s.store).Balance(ctx, "ws_a"); err != nil || b.Available != funded || b.Reserved != 0 {
		t.Errorf("balance %+v, %v; want %d available and nothing reserved", b, err, funded)
	}
}

// docs/api.md, "Limits": the job is durable once written; an enqueue that fails
// leaves it to the sweeper, and the client gets its job.
func TestACreationWhoseEnqueueFailsIsStillAnswered(t *testing.T) {
	s := newStack(t)
	h := s.build(generatefn.Build)
	s.queues.Set("SendMessage", testenv.Unavailable)
	out := s.call(h, lambdaTimeout, "POST", "/generate/image/vendor-b/model-e-4", "application/json",
		`{"prompt":"a cat","width":64,"height":64}`)
	var rec struct {
		ID     string `json:"job_id"`
		Status string `json:"status"`
	}
	if out.StatusCode != 200 || json.Unmarshal([]byte(out.Body), &rec) != nil || rec.Status != "queued" {
		t.Fatalf("%d %s; want 200 and a queued job", out.StatusCode, out.Body)
	}
	if j, err := s.store.Job(context.Background(), rec.ID); err != nil || j.Status != job.Queued {
		t.Errorf("stored job %v, %v; want it queued", j, err)
	}
	if s.queues.Failed("SendMessage") == 0 || len(s.logs.lines("enqueue failed; left for the sweeper")) != 1 {
		t.Errorf("the enqueue was not tried and logged as failed:\n%s", s.logs.lines())
	}
}

// What the service can judge without the failing dependency keeps its 4xx.
func TestClientMistakesKeepTheir4xxDuringAnOutage(t *testing.T) {
	s := newStack(t)
	gen, jobs := s.build(generatefn.Build), s.build(jobsfn.Build)
	for _, op := range []string{"TransactWriteItems", "Query"} {
		s.table.Set(op, testenv.Freeze)
	}
	s.queues.Set("*", testenv.Freeze)
	for _, c := range []struct {
		h                  http.Handler
		method, path, body string
		status             int
		error              string
	}{
		{gen, "POST", "/generate/image/vendor-b/model-e-4", `{"prompt":"a cat","width":64}`, 400, "The request body is invalid: height is required"},
		{gen, "POST", "/generate/image/vendor-b/no-such-model", `{}`, 404, "Not found."},
		{jobs, "GET", "/jobs?limit=0", "", 400, "The query is invalid: limit must be an integer between 1 and 1000"},
		{jobs, "GET", "/jobs/not-a-job", "", 404, "Job not found."},
	} {
		out := s.call(c.h, lambdaTimeout, c.method, c.path, "application/json", c.body)
		want, _ := json.Marshal(map[string]string{"error": c.error})
		if out.StatusCode != c.status || out.Body != string(want) {
			t.Errorf("%s %s: %d %s; want %d %s", c.method, c.path, out.StatusCode, out.Body, c.status, want)
		}
	}
	// A token that is not one is refused before any read.
	s.table.Set("*", testenv.Freeze)
	s.token = "gjs_short"
	if out := s.call(jobs, lambdaTimeout, "GET", "/jobs", "", ""); out.StatusCode != 401 {
		t.Errorf("a malformed token during an outage: %d %s; want 401", out.StatusCode, out.Body)
	}
}

// A failure that is no outage (here a table that does not exist: a broken
// deployment) stays a 500 with the fixed message.
func TestABugIsStillA500(t *testing.T) {
	s := newStack(t)
	s.d.Table = "no-such-table"
	out := s.call(s.build(usagefn.Build), lambdaTimeout, "GET", "/usage", "", "")
	if out.StatusCode != 500 || out.Body != `{"error":"Internal server error."}` || out.Headers.Get("Retry-After") != "" {
		t.Errorf("%d %s, Retry-After %q; want 500 and no Retry-After", out.StatusCode, out.Body, out.Headers.Get("Retry-After"))
	}
}
