package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/xeipuuv/gojsonschema"

	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/billing/prices"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/generate"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/job"
	"genjobs/internal/lifecycle"
	"genjobs/internal/openapi"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// now is after both deprecation dates (docs/api.md, "Body rules").
var now = time.Date(2026, 11, 21, 20, 33, 0, 120e6, time.UTC)

// minimal holds a valid body of each endpoint.
var minimal = map[string]string{
	"/generate/enhance/vendor-a/standard-enhance": `{"width":1024,"height":768,"image_url":"https://example.com/a.png","model":"Standard V2"}`,
	"/generate/video/vendor-b/model-b-fast":       `{"prompt":"a cat"}`,
	"/generate/video/vendor-c/model-c":            `{"prompt":"a cat"}`,
	"/generate/video/vendor-d/model-d-flash-1.1":  `{"prompt":"a cat"}`,
	"/generate/image/vendor-b/model-e-4":          `{"prompt":"a cat","width":1024,"height":1024}`,
	"/generate/video/vendor-f/model-f-2.2":        `{"prompt":"a cat","width":1280,"height":720}`,
	"/generate/3d/vendor-g/model-g-3.1-rapid":     `{}`,
}

// env is one test's API on its own table and queue, with two workspaces.
type env struct {
	t        *testing.T
	db       *dynamodb.Client
	sqs      *sqs.Client
	store    *store.Store
	queueURL string
	clock    *clock.Fixed
	api      http.Handler
	inproc   http.Handler // the same routes without the Lambda adapter, as in-process callers reach them
	tokenA   string
	tokenB   string
	logs     *bytes.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, db: testenv.DynamoDB(t), sqs: testenv.SQS(t), clock: &clock.Fixed{T: now}, logs: &bytes.Buffer{}}
	table := testenv.UniqueName(t, "api")
	if err := schema.CreateTable(ctx, e.db, table); err != nil {
		t.Fatal(err)
	}
	e.store = store.New(e.db, table)
	e.queueURL = testenv.NewQueue(t)
	e.tokenA = e.workspace("ws_a", true)
	e.tokenB = e.workspace("ws_b", true)
	e.api = e.handler(e.queueURL)
	return e
}

func (e *env) handler(queueURL string) http.Handler {
	cat, err := catalog.New()
	if err != nil {
		e.t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	a := auth.Authenticator{Dir: tokensdb.Directory(e.store)}
	list, err := prices.Load(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	gen := &generate.Handler{Auth: a, Catalog: cat, Jobs: e.store, Prices: list, Results: fakeURLs{},
		Queue: queue.NewJobSender(e.sqs, queueURL), Assets: assetsdb.New(e.store), Clock: e.clock}
	q := queue.NewJobSender(e.sqs, queueURL)
	life := &lifecycle.Ender{Store: e.store, Queue: q, Clock: e.clock, Log: log}
	jobs := &httpapi.Jobs{Auth: a, Jobs: e.store, Cancel: life, Results: fakeURLs{}, Deliveries: deliveriesdb.New(e.store)}
	mux := http.NewServeMux()
	mux.Handle("/generate/", httpapi.Middleware(log, gen.Routes()))
	mux.Handle("/jobs", httpapi.Middleware(log, jobs.Routes()))
	mux.Handle("/jobs/", httpapi.Middleware(log, jobs.Routes()))
	usage := &httpapi.Usage{Auth: a, Ledger: ledgerdb.New(e.store), Clock: e.clock}
	mux.Handle("/usage", httpapi.Middleware(log, usage.Routes()))
	e.inproc = mux
	return lambdatest.Handler(mux)
}

// workspace makes a workspace with room for every test's jobs and returns a token.
func (e *env) workspace(id string, enabled bool) string {
	return e.limitedWorkspace(id, enabled, 100, 100)
}

func (e *env) limitedWorkspace(id string, enabled bool, maxConcurrent, maxRunning int) string {
	return e.fundedWorkspace(id, enabled, maxConcurrent, maxRunning, 1000*billing.USD)
}

// fundedWorkspace makes a workspace with this balance (none when zero).
func (e *env) fundedWorkspace(id string, enabled bool, maxConcurrent, maxRunning int, balance billing.Micros) string {
	e.t.Helper()
	ctx := context.Background()
	w := auth.Workspace{ID: id, Name: id, APIEnabled: enabled, MaxConcurrent: maxConcurrent, MaxRunning: maxRunning, CreatedAt: now}
	if err := accountsdb.New(e.store).CreateWorkspace(ctx, w); err != nil {
		e.t.Fatal(err)
	}
	if balance > 0 {
		if _, err := accountsdb.New(e.store).TopUp(ctx, id, "pay_"+id, balance, now); err != nil {
			e.t.Fatal(err)
		}
	}
	token, hash := auth.NewToken()
	if err := tokensdb.New(e.store).CreateToken(ctx, auth.Token{ID: "tok_" + id, WorkspaceID: id, Name: "ci of " + id, Hash: hash, CreatedAt: now}); err != nil {
		e.t.Fatal(err)
	}
	return token
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response %d is not a JSON object: %s", r.status, r.body)
	}
	return m
}

func (r response) errorText(t *testing.T) string {
	t.Helper()
	m := r.json(t)
	if len(m) != 1 {
		t.Errorf("error body has fields other than error: %s", r.body)
	}
	s, _ := m["error"].(string)
	return s
}

func (e *env) do(method, path, token, body string, headers ...string) response {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return response{rec.Code, rec.Result().Header, b}
}

// itemCount counts the table's items whose PK starts with prefix.
func (e *env) itemCount(prefix string) int {
	e.t.Helper()
	out, err := e.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.store.Table())})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, item := range out.Items {
		pk, _ := item["PK"].(*types.AttributeValueMemberS)
		sk, _ := item["SK"].(*types.AttributeValueMemberS)
		if prefix == "JOB#" && sk != nil && sk.Value == "REQUEST" {
			continue // a job's request, in an item of its own: the job is counted once
		}
		if pk != nil && strings.HasPrefix(pk.Value, prefix) {
			n++
		}
	}
	return n
}

// queued receives the ids waiting on the test's queue.
func (e *env) queued() []string {
	e.t.Helper()
	var ids []string
	for {
		out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 0,
		})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return ids
		}
		for _, m := range out.Messages {
			var msg queue.Message
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &msg); err != nil {
				e.t.Fatalf("queue message %q: %v", aws.ToString(m.Body), err)
			}
			ids = append(ids, msg.JobID)
			_, _ = e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queueURL), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func TestEachEndpointCreatesAQueuedJobThatReadsBack(t *testing.T) {
	e := newEnv(t)
	for path, body := range minimal {
		resp := e.do("POST", path, e.tokenA, body)
		if resp.status != 200 {
			t.Fatalf("POST %s: %d %s", path, resp.status, resp.body)
		}
		rec := resp.json(t)
		want := map[string]any{"status": "queued", "created_at": "2026-11-21T20:33:00.120Z", "completed_at": nil, "result": nil}
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("POST %s: %s = %v; want %v", path, k, rec[k], v)
			}
		}
		for k := range rec {
			switch k {
			case "job_id", "status", "created_at", "completed_at", "result", "progress":
			default:
				t.Errorf("POST %s: the job record has a field %q the job record does not have", path, k)
			}
		}
		matchesSchema(t, "Job", resp.body)
		id, _ := rec["job_id"].(string)
		if !job.ValidID(id) {
			t.Fatalf("POST %s: job_id %q is not a UUID", path, id)
		}
		got := e.do("GET", "/jobs/"+strings.ToUpper(id), e.tokenA, "")
		if got.status != 200 || !bytes.Equal(got.body, resp.body) {
			t.Errorf("GET /jobs/%s = %d %s; want the creation record %s", id, got.status, got.body, resp.body)
		}
		stored, err := e.store.Job(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Request, err = e.store.JobRequest(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if stored.Endpoint != path || stored.WorkspaceID != "ws_a" || !json.Valid(stored.Request) {
			t.Errorf("stored job %+v: want endpoint %s, workspace ws_a and the request", stored, path)
		}
		if ids := e.queued(); len(ids) != 1 || ids[0] != id {
			t.Errorf("queue holds %v; want [%s]", ids, id)
		}
	}
}

// matchesSchema checks a response body against a component of the OpenAPI
// document: what the API promises, checked against what it answers.
func matchesSchema(t *testing.T, name string, body []byte) {
	t.Helper()
	raw, ok := openapi.ComponentSchema(name)
	if !ok {
		t.Fatalf("the OpenAPI document has no %s schema", name)
	}
	res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(raw), gojsonschema.NewBytesLoader(body))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid() {
		t.Errorf("%s does not match the OpenAPI %s schema: %v", body, name, res.Errors())
	}
}

func TestTheStoredRequestHasDefaultsFilled(t *testing.T) {
	e := newEnv(t)
	resp := e.do("POST", "/generate/video/vendor-b/model-b-fast", e.tokenA, `{"prompt":"a cat"}`)
	if resp.status != 200 {
		t.Fatalf("%d %s", resp.status, resp.body)
	}
	stored, err := e.store.Job(context.Background(), resp.json(t)["job_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if stored.Request, err = e.store.JobRequest(context.Background(), stored.ID); err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(stored.Request, &req); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"prompt": "a cat", "resolution": "720p", "duration": 5.0, "aspect_ratio": "16:9", "upscale": false} {
		if req[k] != v {
			t.Errorf("stored request %s = %v; want %v", k, req[k], v)
		}
	}
}

func TestRefusedRequestsWriteNothing(t *testing.T) {
	e := newEnv(t)
	enhance := "/generate/enhance/vendor-a/standard-enhance"
	cases := []struct {
		name, path, body string
		headers          []string
		status           int
		text             string
	}{
		{"bound", enhance, `{"width":0,"height":768,"image_url":"https://example.com/a.png","model":"Standard V2"}`, nil, 400,
			"The request body is invalid: width must be between 1 and 32000"},
		{"unknown field", enhance, `{"width":1,"height":1,"image_url":"https://example.com/a.png","model":"Standard V2","colour":"red"}`, nil, 400,
			"The request body is invalid: colour is not a known field"},
		{"not an object", enhance, `[]`, nil, 400, "The request body is invalid: the body must be a JSON object"},
		{"alias after its date", enhance, `{"width":1,"height":1,"imageUrl":"https://example.com/a.png","model":"Standard V2"}`, nil, 400,
			"The request body is invalid: imageUrl was removed on 2026-06-19; use image_url"},
		{"ignored field after its date", "/generate/video/vendor-b/model-b-fast", `{"prompt":"x","generate_audio":true}`, nil, 400,
			"The request body is invalid: generate_audio is no longer accepted since 2026-10-30; remove it"},
		{"content type", enhance, minimal[enhance], []string{"Content-Type", "text/plain"}, 400,
			"The request body is invalid: Content-Type must be application/json"},
		{"oversize", "/generate/3d/vendor-g/model-g-3.1-rapid", `{"prompt":"` + strings.Repeat("a", 70<<10) + `"}`, nil, 400,
			"The request body is invalid: the body is larger than 65536 bytes"},
		{"webhook not https", enhance, minimal[enhance], []string{"X-Webhook-URL", "http://example.com/hook"}, 400,
			"The request headers are invalid: X-Webhook-URL must be an absolute https:// URL"},
		{"webhook user info", enhance, minimal[enhance], []string{"X-Webhook-URL", "https://u:p@example.com/hook"}, 400,
			"The request headers are invalid: X-Webhook-URL must not contain user info"},
		{"webhook too long", enhance, minimal[enhance], []string{"X-Webhook-URL", "https://example.com/" + strings.Repeat("a", 2048)}, 400,
			"The request headers are invalid: X-Webhook-URL must be at most 2048 characters"},
		{"webhook port 0", enhance, minimal[enhance], []string{"X-Webhook-URL", "https://example.com:0/hook"}, 400,
			"The request headers are invalid: X-Webhook-URL has a port outside 1..65535"},
		{"webhook port 65536", enhance, minimal[enhance], []string{"X-Webhook-URL", "https://example.com:65536/hook"}, 400,
			"The request headers are invalid: X-Webhook-URL has a port outside 1..65535"},
		{"webhook list", enhance, minimal[enhance], []string{"X-Webhook-URL", "https://a.example/x,https://b.example/y"}, 400,
			"The request headers are invalid: X-Webhook-URL must be one URL, not a list"},
		{"webhook space", enhance, minimal[enhance], []string{"X-Webhook-URL", "https://a.example/x y"}, 400,
			"The request headers are invalid: X-Webhook-URL must not contain white space"},
		{"unknown model", "/generate/video/vendor-b/model-z", `{"prompt":"x"}`, nil, 404, "Not found."},
	}
	for _, c := range cases {
		resp := e.do("POST", c.path, e.tokenA, c.body, c.headers...)
		matchesSchema(t, "Error", resp.body)
		if resp.status != c.status || resp.errorText(t) != c.text {
			t.Errorf("%s: %d %s\nwant %d %q", c.name, resp.status, resp.body, c.status, c.text)
		}
	}
	if n := e.itemCount("JOB#"); n != 0 {
		t.Errorf("refused requests wrote %d jobs", n)
	}
	if ids := e.queued(); len(ids) != 0 {
		t.Errorf("refused requests enqueued %v", ids)
	}
}

// The webhook URL is stored byte for byte: receivers compare the signature's
// aud with their own URL, so no normalisation may touch it.
func TestWebhookURLIsKeptAsSent(t *testing.T) {
	e := newEnv(t)
	for _, url := range []string{"https://Example.COM:443/a/../hook?x=1,2&y=%41", "https://example.com/h#frag"} {
		resp := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", e.tokenA, `{}`, "X-Webhook-URL", url)
		if resp.status != 200 {
			t.Fatalf("%s: %d %s", url, resp.status, resp.body)
		}
		stored, err := e.store.Job(context.Background(), resp.json(t)["job_id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if stored.WebhookURL != url {
			t.Errorf("stored %q; sent %q", stored.WebhookURL, url)
		}
	}
	// Two header lines are a list, not one URL.
	req := httptest.NewRequest("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+e.tokenA)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("X-Webhook-URL", "https://a.example/x")
	req.Header.Add("X-Webhook-URL", "https://b.example/y")
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "must be one URL, not a list") {
		t.Errorf("two X-Webhook-URL lines: %d %s", rec.Code, rec.Body)
	}
}

func TestDeprecatedAliasBeforeItsDateIsRenamedAndFlagged(t *testing.T) {
	e := newEnv(t)
	e.clock.T = time.Date(2026, 6, 18, 23, 59, 59, 0, time.UTC)
	resp := e.do("POST", "/generate/enhance/vendor-a/standard-enhance", e.tokenA,
		`{"width":1,"height":1,"imageUrl":"https://example.com/a.png","model":"Standard V2"}`)
	if resp.status != 200 {
		t.Fatalf("%d %s", resp.status, resp.body)
	}
	if resp.header.Get("Sunset") != "Fri, 19 Jun 2026 00:00:00 GMT" || !strings.HasPrefix(resp.header.Get("Deprecation"), "@") {
		t.Errorf("Deprecation %q, Sunset %q", resp.header.Get("Deprecation"), resp.header.Get("Sunset"))
	}
	stored, err := e.store.Job(context.Background(), resp.json(t)["job_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if stored.Request, err = e.store.JobRequest(context.Background(), stored.ID); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stored.Request), `"image_url":"https://example.com/a.png"`) || strings.Contains(string(stored.Request), "imageUrl") {
		t.Errorf("stored request %s: the alias was not renamed", stored.Request)
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	disabled := e.workspace("ws_off", false)
	revoked := e.workspace("ws_rev", true)
	if err := tokensdb.New(e.store).RevokeToken(context.Background(), "ws_rev", "tok_ws_rev", now); err != nil {
		t.Fatal(err)
	}
	path := "/generate/3d/vendor-g/model-g-3.1-rapid"
	for name, c := range map[string]struct {
		header, text string
	}{
		"missing":     {"", "You are not authenticated."},
		"not bearer":  {"Basic " + e.tokenA, "You are not authenticated."},
		"malformed":   {"Bearer gjs_short", "You are not authenticated."},
		"unknown":     {"Bearer gjs_" + strings.Repeat("A", 43), "You are not authenticated."},
		"revoked":     {"Bearer " + revoked, "You are not authenticated."},
		"api off":     {"Bearer " + disabled, "API access is not enabled for this workspace."},
		"lower case":  {"bearer " + e.tokenA, ""},
		"extra space": {"Bearer  " + e.tokenA, ""},
	} {
		for _, req := range []struct{ method, path, body string }{{"POST", path, "{}"}, {"GET", "/jobs", ""}, {"GET", "/jobs/" + job.NewID(now), ""}} {
			r := httptest.NewRequest(req.method, req.path, strings.NewReader(req.body))
			r.Header.Set("Content-Type", "application/json")
			if c.header != "" {
				r.Header.Set("Authorization", c.header)
			}
			rec := httptest.NewRecorder()
			e.api.ServeHTTP(rec, r)
			if c.text == "" {
				if rec.Code == 401 {
					t.Errorf("%s: %s %s refused: %s", name, req.method, req.path, rec.Body)
				}
				continue
			}
			if rec.Code != 401 || !strings.Contains(rec.Body.String(), `"error":"`+c.text+`"`) {
				t.Errorf("%s: %s %s = %d %s; want 401 %q", name, req.method, req.path, rec.Code, rec.Body, c.text)
			}
		}
	}
	if n := e.itemCount("JOB#"); n != 2 {
		t.Errorf("%d jobs written; want only the 2 of the valid tokens", n)
	}
}

func TestWorkspacesDoNotSeeEachOthersJobs(t *testing.T) {
	e := newEnv(t)
	a := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", e.tokenA, `{}`).json(t)["job_id"].(string)
	b := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", e.tokenB, `{}`).json(t)["job_id"].(string)
	if r := e.do("GET", "/jobs/"+a, e.tokenB, ""); r.status != 404 || r.errorText(t) != "Job not found." {
		t.Errorf("B reading A's job: %d %s; want 404 Job not found.", r.status, r.body)
	}
	for _, id := range []string{job.NewID(now), "not-a-uuid", "00000000-0000-0000-0000-000000000000"} {
		if r := e.do("GET", "/jobs/"+id, e.tokenB, ""); r.status != 404 || r.errorText(t) != "Job not found." {
			t.Errorf("GET /jobs/%s: %d %s; want 404", id, r.status, r.body)
		}
	}
	listed := e.do("GET", "/jobs", e.tokenB, "")
	matchesSchema(t, "JobList", listed.body)
	list := listed.json(t)
	items, _ := list["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["job_id"] != b || list["next_cursor"] != nil {
		t.Errorf("B's list = %v; want only its job %s", list, b)
	}
}

func TestListPagesWithCursors(t *testing.T) {
	e := newEnv(t)
	var created []string
	for i := 0; i < 5; i++ {
		e.clock.T = now.Add(time.Duration(i) * time.Second)
		created = append(created, e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", e.tokenA, `{}`).json(t)["job_id"].(string))
	}
	var seen []string
	cursor := ""
	for page := 0; page < 10; page++ {
		path := "/jobs?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := e.do("GET", path, e.tokenA, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		body := r.json(t)
		for _, it := range body["items"].([]any) {
			seen = append(seen, it.(map[string]any)["job_id"].(string))
		}
		next, _ := body["next_cursor"].(string)
		if next == "" {
			break
		}
		if cursor == "" {
			// The cursor is bound to its workspace and query.
			if r := e.do("GET", "/jobs?limit=2&cursor="+next, e.tokenB, ""); r.status != 400 {
				t.Errorf("A's cursor used by B: %d %s; want 400", r.status, r.body)
			}
			if r := e.do("GET", "/jobs?limit=2&status=failed&cursor="+next, e.tokenA, ""); r.status != 400 {
				t.Errorf("cursor with another status filter: %d %s; want 400", r.status, r.body)
			}
		}
		cursor = next
	}
	for i := range created {
		if i >= len(seen) || seen[i] != created[len(created)-1-i] {
			t.Fatalf("pages listed %v; want newest first %v", seen, created)
		}
	}
	if len(seen) != len(created) {
		t.Errorf("pages listed %d jobs; want %d", len(seen), len(created))
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "status=done", "cursor=%25%25", "limit=1&limit=2", "colour=red"} {
		if r := e.do("GET", "/jobs?"+q, e.tokenA, ""); r.status != 400 || !strings.HasPrefix(r.errorText(t), "The query is invalid: ") {
			t.Errorf("GET /jobs?%s: %d %s; want 400", q, r.status, r.body)
		}
	}
}

func TestAFailedEnqueueStillAnswersWithADurableJob(t *testing.T) {
	e := newEnv(t)
	e.api = e.handler(e.queueURL + "-missing")
	r := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", e.tokenA, `{}`)
	if r.status != 200 {
		t.Fatalf("%d %s; want 200 even though the queue is gone", r.status, r.body)
	}
	id := r.json(t)["job_id"].(string)
	if got := e.do("GET", "/jobs/"+id, e.tokenA, ""); got.status != 200 {
		t.Errorf("the job is not findable: %d %s", got.status, got.body)
	}
	if !strings.Contains(e.logs.String(), "enqueue failed") || !strings.Contains(e.logs.String(), id) {
		t.Errorf("the failed enqueue was not logged with the job id:\n%s", e.logs)
	}
}

func TestInternalErrorsAreLoggedNotShown(t *testing.T) {
	e := newEnv(t)
	e.store = store.New(e.db, "no-such-table")
	e.api = e.handler(e.queueURL)
	r := e.do("POST", "/generate/3d/vendor-g/model-g-3.1-rapid", e.tokenA, `{}`)
	if r.status != 500 || r.errorText(t) != "Internal server error." {
		t.Errorf("%d %s; want 500 with the fixed text", r.status, r.body)
	}
	if !strings.Contains(e.logs.String(), `"request_id"`) || !strings.Contains(e.logs.String(), "ResourceNotFoundException") {
		t.Errorf("the error was not logged with a request id:\n%s", e.logs)
	}
}
