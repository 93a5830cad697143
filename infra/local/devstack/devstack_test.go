package devstack_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/app"
	"genjobs/internal/auth"
	"genjobs/internal/httpapi/apigw"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const repo = "../../.."

// stack is the local stack's setup on a fresh table, queues and buckets
// (tests share the emulators: each keeps to its own resources).
func stack(t *testing.T) (map[string]triggers.Handlers, *store.Store, string) {
	_, hs, s, token := stackWith(t)
	return hs, s, token
}

func stackWith(t *testing.T, opts ...func(*devstack.Stack)) (*devstack.Stack, map[string]triggers.Handlers, *store.Store, string) {
	t.Helper()
	ctx := context.Background()
	local := devstack.New(testenv.DynamoDB(t), testenv.SQS(t), testenv.S3(t), "http://127.0.0.1:3000")
	tpl := devstacktest.Provision(t, local, opts...)
	s := store.New(local.DynamoDB, local.Table)
	token, err := devstack.SeedDemo(ctx, s, filepath.Join(t.TempDir(), "demo-token"))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := local.Functions(tpl, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return local, hs, s, token
}

// servedStack is stackWith behind the API Gateway stand-in on a test
// server, as `make run` serves it; with triggers, the template's mappings
// and schedule play too until the test ends.
func servedStack(t *testing.T, withTriggers bool, opts ...func(*devstack.Stack)) (*devstack.Stack, *httptest.Server, *store.Store, string) {
	t.Helper()
	local, hs, st, token := stackWith(t, opts...)
	return serve(t, local, hs, st, token, withTriggers)
}

// servedStackWithHandlers is servedStack with its triggers, after change
// has replaced some of the functions' handlers (a test switching one off).
func servedStackWithHandlers(t *testing.T, change func(map[string]triggers.Handlers)) (*devstack.Stack, *httptest.Server, *store.Store, string) {
	t.Helper()
	local, hs, st, token := stackWith(t)
	change(hs)
	return serve(t, local, hs, st, token, true)
}

func serve(t *testing.T, local *devstack.Stack, hs map[string]triggers.Handlers, st *store.Store, token string, withTriggers bool) (*devstack.Stack, *httptest.Server, *store.Store, string) {
	t.Helper()
	tpl, err := sam.Load(filepath.Join(repo, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	gw, err := apigw.New(tpl.Routes(), triggers.HTTP(tpl, hs), log)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(gw)
	t.Cleanup(api.Close)
	if withTriggers {
		ctx, stop := context.WithCancel(context.Background())
		o := local.TriggerOptions()
		o.PollWait, o.ScheduleEvery, o.Log = time.Second, time.Second, log
		runner, err := triggers.Start(ctx, tpl, hs, o)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		t.Cleanup(func() { stop(); runner.Wait() })
	}
	return local, api, st, token
}

func TestSeedDemoKeepsItsTokenAcrossRuns(t *testing.T) {
	ctx := context.Background()
	s := store.New(testenv.DynamoDB(t), testenv.UniqueName(t, "seed"))
	if err := schema.CreateTable(ctx, testenv.DynamoDB(t), s.Table()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "demo-token")
	first, err := devstack.SeedDemo(ctx, s, file)
	if err != nil {
		t.Fatal(err)
	}
	second, err := devstack.SeedDemo(ctx, s, file)
	if err != nil || second != first {
		t.Fatalf("second run printed %q (%v); want the same token %q", second, err, first)
	}
	if b, _ := accountsdb.New(s).Balance(ctx, devstack.DemoWorkspace); b.Available != 25_000_000 {
		t.Errorf("demo balance %d micro-USD after two runs; want 25 USD once", b.Available)
	}
	p, err := auth.Authenticator{Dir: tokensdb.Directory(s)}.Authenticate(ctx, "Bearer "+first)
	if err != nil || p.WorkspaceID != devstack.DemoWorkspace {
		t.Errorf("the demo token does not authenticate: %+v %v", p, err)
	}
}

func TestEveryFunctionOfTheTemplateIsBuilt(t *testing.T) {
	tpl, err := sam.Load(filepath.Join(repo, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hs, _, _ := stack(t)
	if _, err := apigw.New(tpl.Routes(), triggers.HTTP(tpl, hs), slog.Default()); err != nil {
		t.Error(err)
	}
	for _, f := range tpl.Functions() {
		h := hs[f.LogicalID]
		if h.HTTP == nil && h.SQS == nil && h.Schedule == nil && h.Stream == nil {
			t.Errorf("%s has no handler", f.LogicalID)
		}
	}
	for name, fn := range devstack.Functions {
		found := false
		for _, f := range tpl.Functions() {
			found = found || app.FunctionName(f.LogicalID) == name
		}
		if !found {
			t.Errorf("devstack.Functions builds %s, which template.yaml does not deploy", name)
		}
		// What runs locally is what the function's main runs in Lambda.
		var builder any
		switch {
		case fn.HTTP != nil:
			builder = fn.HTTP
		case fn.SQS != nil:
			builder = fn.SQS
		case fn.Schedule != nil:
			builder = fn.Schedule
		case fn.Stream != nil:
			builder = fn.Stream
		}
		full := runtime.FuncForPC(reflect.ValueOf(builder).Pointer()).Name() // genjobs/internal/app.Jobs
		main, err := os.ReadFile(filepath.Join(repo, "functions", name, "main.go"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		call := full[strings.LastIndex(full, "/")+1:] // app.Jobs, workerfn.Build
		if !strings.Contains(string(main), call+"}") {
			t.Errorf("functions/%s/main.go does not start %s, which the local runner builds", name, call)
		}
	}
}

// eventStatus is what each sample event gets from its function.
var eventStatus = map[string]struct {
	function string
	status   int
}{
	"generate-enhance.json":               {"GenerateFunction", 200},
	"generate-model-b-fast.json":          {"GenerateFunction", 200},
	"generate-model-c.json":               {"GenerateFunction", 200},
	"generate-model-d-flash.json":         {"GenerateFunction", 200},
	"generate-model-e-4.json":             {"GenerateFunction", 200},
	"generate-model-f.json":               {"GenerateFunction", 200},
	"generate-model-g-3d.json":            {"GenerateFunction", 200},
	"generate-invalid-bound.json":         {"GenerateFunction", 400},
	"generate-invalid-unknown-field.json": {"GenerateFunction", 400},
	"generate-invalid-alias.json":         {"GenerateFunction", 400},
	"generate-unauthenticated.json":       {"GenerateFunction", 401},
	"generate-idempotent.json":            {"GenerateFunction", 200},
	"jobs-get.json":                       {"JobsFunction", 200},
	"jobs-get-unknown.json":               {"JobsFunction", 404},
	"jobs-list.json":                      {"JobsFunction", 200},
	"jobs-list-invalid-limit.json":        {"JobsFunction", 400},
	"jobs-cancel.json":                    {"JobsFunction", 200},
	"assets-upload-start.json":            {"AssetsFunction", 201},
	"assets-get-unknown.json":             {"AssetsFunction", 404},
	"styles-list.json":                    {"StylesFunction", 200},
	"styles-list-invalid-filter.json":     {"StylesFunction", 400},
	"styles-share-link.json":              {"StylesFunction", 201},
	"openapi.json":                        {"OpenAPIFunction", 200},
	"worker-job.json":                     {"WorkerFunction", 0},
	"sweeper-schedule.json":               {"SweeperFunction", 0},
	"notfound.json":                       {"NotFoundFunction", 404},
	"usage.json":                          {"UsageFunction", 200},
	"mcp-tools-list.json":                 {"MCPFunction", 200},
	"jwks.json":                           {"JwksFunction", 200},
	"jobs-deliveries.json":                {"JobsFunction", 200},
	"deliverer-attempt.json":              {"DelivererFunction", 0},
	"usage-invalid-days.json":             {"UsageFunction", 400},
	"callbacks-unverified.json":           {"CallbacksFunction", 401},
	"provider-step.json":                  {"ProviderFunction", 0},
	"console-sign-in.json":                {"ConsoleFunction", 200},
	"stripewebhook-unsigned.json":         {"StripeWebhookFunction", 400},
}

func TestSampleEvents(t *testing.T) {
	hs, _, token := stack(t)
	files, err := filepath.Glob(filepath.Join(repo, "events", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events: %v", err)
	}
	var lastJob string
	// Generation events first, so jobs-get.json has a job to read.
	for _, pass := range []string{"generate-", ""} {
		for _, file := range files {
			name := filepath.Base(file)
			if !strings.HasPrefix(name, pass) || (pass == "" && strings.HasPrefix(name, "generate-")) {
				continue
			}
			want, ok := eventStatus[name]
			if !ok {
				t.Errorf("events/%s has no expected status in this test", name)
				continue
			}
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.NewReplacer("{{TOKEN}}", token, "{{JOB_ID}}", lastJob).Replace(string(raw))
			if h := hs[want.function]; h.SQS != nil {
				var ev events.SQSEvent
				if err := json.Unmarshal([]byte(text), &ev); err != nil {
					t.Fatalf("events/%s: %v", name, err)
				}
				// The job was cancelled by jobs-cancel.json: acknowledged, not retried.
				resp, err := h.SQS(context.Background(), ev)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Errorf("events/%s: %+v, %v; want the message acknowledged", name, resp, err)
				}
				continue
			} else if h.Schedule != nil {
				var ev events.EventBridgeEvent
				if err := json.Unmarshal([]byte(text), &ev); err != nil {
					t.Fatalf("events/%s: %v", name, err)
				}
				if err := h.Schedule(context.Background(), ev); err != nil {
					t.Errorf("events/%s: %v", name, err)
				}
				continue
			}
			var ev events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal([]byte(text), &ev); err != nil {
				t.Fatalf("events/%s: %v", name, err)
			}
			resp, err := hs[want.function].HTTP(context.Background(), ev)
			if err != nil || resp.StatusCode != want.status {
				t.Errorf("events/%s: %d %s (%v); want %d", name, resp.StatusCode, resp.Body, err, want.status)
				continue
			}
			if strings.HasPrefix(resp.Headers["Content-Type"], "text/html") {
				// The console answers pages.
				if !strings.HasPrefix(resp.Body, "<!doctype html>") {
					t.Errorf("events/%s: an HTML answer that is no page: %.200s", name, resp.Body)
				}
				continue
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
				t.Errorf("events/%s: the body is not JSON: %s", name, resp.Body)
			}
			if want.status >= 400 {
				if msg, _ := body["error"].(string); msg == "" || len(body) != 1 {
					t.Errorf("events/%s: error body %s", name, resp.Body)
				}
			}
			if id, ok := body["job_id"].(string); ok && name != "jobs-get.json" {
				lastJob = id
			}
		}
	}
}

// An Idempotency-Key with a comma reaches the handler whole through the
// Lambda event (the api-proxy alone would split it): one key, the same on
// every retry.
func TestIdempotencyKeyThroughTheLambdaEvent(t *testing.T) {
	hs, _, token := stack(t)
	raw, err := os.ReadFile(filepath.Join(repo, "events", "generate-idempotent.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "{{TOKEN}}", token)), &ev); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 2; i++ {
		resp, err := hs["GenerateFunction"].HTTP(context.Background(), ev)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("attempt %d: %d %s (%v)", i, resp.StatusCode, resp.Body, err)
		}
		if replayed := resp.Headers["Idempotent-Replayed"]; (i == 1) != (replayed == "true") {
			t.Errorf("attempt %d: Idempotent-Replayed %q", i, replayed)
		}
		var rec struct {
			ID string `json:"job_id"`
		}
		_ = json.Unmarshal([]byte(resp.Body), &rec)
		ids = append(ids, rec.ID)
	}
	if ids[0] == "" || ids[0] != ids[1] {
		t.Errorf("job ids %v; want the same job twice", ids)
	}
	// Another body under the key is refused.
	ev.Body = `{"prompt":"something else"}`
	if resp, _ := hs["GenerateFunction"].HTTP(context.Background(), ev); resp.StatusCode != 422 {
		t.Errorf("the key with another body: %d %s", resp.StatusCode, resp.Body)
	}
}

// Under Lambda X-Webhook-URL reaches the handler as the event carries it,
// joined with commas by API Gateway when a client sends two: a list is
// refused, a URL with commas is stored byte for byte.
func TestWebhookURLThroughTheLambdaEvent(t *testing.T) {
	hs, s, token := stack(t)
	raw, err := os.ReadFile(filepath.Join(repo, "events", "generate-model-g-3d.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url    string
		status int
	}{
		{"https://hooks.example.com/in?ids=1,2,3&sig=a%2Cb", 200},
		{"https://a.example/x,https://b.example/y", 400},
		{"https://a.example/x, https://b.example/y", 400},
		{"https://a.example:0/x", 400},
	} {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "{{TOKEN}}", token)), &ev); err != nil {
			t.Fatal(err)
		}
		ev.Headers["x-webhook-url"] = tc.url
		resp, err := hs["GenerateFunction"].HTTP(context.Background(), ev)
		if err != nil || resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s (%v); want %d", tc.url, resp.StatusCode, resp.Body, err, tc.status)
			continue
		}
		if tc.status != 200 {
			continue
		}
		var rec struct {
			ID string `json:"job_id"`
		}
		_ = json.Unmarshal([]byte(resp.Body), &rec)
		j, err := s.Job(context.Background(), rec.ID)
		if err != nil || j.WebhookURL != tc.url {
			t.Errorf("stored %q (%v); sent %q", j.WebhookURL, err, tc.url)
		}
	}
}
