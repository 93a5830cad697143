// Package mcp_test tests the MCP server (internal/mcpserver) end to end, on
// the whole local stack, with the Go SDK's client and the TypeScript SDK's.
// They live here, beside the local stack, because code under internal/ does
// not import infra/.
package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/auth"
	"genjobs/internal/billing/prices"
	"genjobs/internal/catalog"
	"genjobs/internal/job"
	"genjobs/internal/mcpauth"
	"genjobs/internal/mcpserver"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// bearer adds the token to every request of the SDK's client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens a session of the SDK's own client with the server of s, as
// the holder of token.
func connect(t *testing.T, s *devstacktest.Stack, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}, Timeout: 40 * time.Second},
		DisableStandaloneSSE: true, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// record is a job record of a tool result's structured content.
type record struct {
	JobID       string  `json:"job_id"`
	Status      string  `json:"status"`
	CompletedAt *string `json:"completed_at"`
	Result      *struct {
		URLs []string `json:"urls"`
	} `json:"result"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func recordOf(t *testing.T, res *mcp.CallToolResult) record {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return r
}

// text is a result's first text content.
func text(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

const imageTool = "generate_image_model_e_4"

// jobsOf lists a workspace's jobs straight from the table.
func jobsOf(t *testing.T, s *devstacktest.Stack, ws string) []*job.Job {
	t.Helper()
	page, err := s.Store.ListJobs(context.Background(), ws, job.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return page.Jobs
}

// post sends body to /mcp as an MCP client would, with token unless empty.
func post(t *testing.T, s *devstacktest.Stack, token string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 40 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// rest sends a request to the REST API with token.
func rest(t *testing.T, s *devstacktest.Stack, token, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	status, _, b := do(t, req)
	return status, b
}

func errorOf(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		t.Fatalf("not an error body: %s", body)
	}
	return strings.TrimSpace(e.Error + " " + e.Message)
}

// toolCall is the JSON-RPC message of a tools/call.
func toolCall(name string, args map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	return b
}

var smallImage = map[string]any{"prompt": "a fox", "width": 64, "height": 64}

func with(base map[string]any, kv ...any) map[string]any {
	m := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestUnauthenticatedRequestsGet401BeforeAnyJSONRPCIsRead(t *testing.T) {
	s := devstacktest.Start(t)
	ctx, now := context.Background(), time.Now()

	revoked, hash := auth.NewToken()
	if err := tokensdb.New(s.Store).CreateToken(ctx, auth.Token{ID: "tok_revoked", WorkspaceID: devstack.DemoWorkspace, Name: "old", Hash: hash, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := tokensdb.New(s.Store).RevokeToken(ctx, devstack.DemoWorkspace, "tok_revoked", now); err != nil {
		t.Fatal(err)
	}
	disabled := s.Workspace(t, "ws-mcp-off", 10*devstacktest.USD, 20, 5)
	if err := accountsdb.New(s.Store).SetAPIEnabled(ctx, "ws-mcp-off", false); err != nil {
		t.Fatal(err)
	}
	create := toolCall(imageTool, smallImage)
	for _, c := range []struct {
		name, token, want string
		body              []byte
	}{
		{"no token", "", "You are not authenticated.", create},
		{"a revoked token", revoked, "You are not authenticated.", create},
		{"API access disabled", disabled, "API access is not enabled for this workspace.", create},
		{"no token, a body that is not JSON", "", "You are not authenticated.", []byte("{not json")},
		{"no token, a body over the bound", "", "You are not authenticated.", bytes.Repeat([]byte("x"), mcpserver.MaxBodyBytes+1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, h, body := post(t, s, c.token, c.body)
			// The challenge leads an OAuth client to sign in; a refused
			// token is named invalid.
			challenge := mcpauth.Challenge(s.URL, c.token != "")
			if status != http.StatusUnauthorized || h.Get("WWW-Authenticate") != challenge || errorOf(t, body) != c.want {
				t.Errorf("got %d, WWW-Authenticate %q, %s; want 401, %s, %q", status, h.Get("WWW-Authenticate"), body, challenge, c.want)
			}
		})
	}
	if n := len(jobsOf(t, s, devstack.DemoWorkspace)) + len(jobsOf(t, s, "ws-mcp-off")); n != 0 {
		t.Errorf("%d jobs were created by unauthenticated calls", n)
	}
}

func TestGetAndDeleteAre405(t *testing.T) {
	s := devstacktest.Start(t)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, s.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		status, h, body := do(t, req)
		if status != http.StatusMethodNotAllowed || h.Get("Allow") != http.MethodPost || !strings.Contains(errorOf(t, body), "POST only") {
			t.Errorf("%s /mcp: %d, Allow %q, %s; want 405, Allow POST, an error naming POST", method, status, h.Get("Allow"), body)
		}
	}
}

func TestToolsAreTheEndpointsWithTheirOwnSchemasAndPrices(t *testing.T) {
	s := devstacktest.Start(t)
	cs := connect(t, s, s.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		tools[tool.Name] = tool
	}
	want := []string{"cancel_job", "generate_3d_model_g_3_1_rapid", "generate_enhance_standard_enhance", "generate_image_model_e_4",
		"generate_video_model_b_fast", "generate_video_model_c", "generate_video_model_d_flash_1_1", "generate_video_model_f_2_2",
		"get_job", "get_usage", "list_jobs", "list_models", "list_styles", "wait_job"}
	if got := slices.Sorted(maps.Keys(tools)); !slices.Equal(got, want) {
		t.Fatalf("tools %v; want %v", got, want)
	}
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	price, err := prices.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cat.Endpoints() {
		tool := tools[mcpserver.ToolName(e)]
		var endpoint, input map[string]any
		if err := json.Unmarshal(e.Schema(), &endpoint); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(b, &input); err != nil {
			t.Fatal(err)
		}
		props := input["properties"].(map[string]any)
		for _, extra := range []string{"idempotency_key", "webhook_url", "wait_seconds"} {
			if props[extra] == nil {
				t.Errorf("%s: no %s argument", tool.Name, extra)
			}
			delete(props, extra)
		}
		eb, _ := json.Marshal(endpoint)
		ib, _ := json.Marshal(input)
		if !bytes.Equal(eb, ib) {
			t.Errorf("%s: input schema without the tool's own arguments\n%s\nis not the endpoint's request schema\n%s", tool.Name, ib, eb)
		}
		rule, err := price.Describe(e.Path())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(tool.Description, rule) || !strings.Contains(tool.Description, e.Takes) || !strings.Contains(tool.Description, e.Description) {
			t.Errorf("%s: description %q lacks what it makes, its price rule %q or how long it takes %q", tool.Name, tool.Description, rule, e.Takes)
		}
	}
	res := call(t, cs, "list_models", nil)
	var models struct {
		Models []struct{ Path, Tool, Price string }
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &models); err != nil || len(models.Models) != len(cat.Endpoints()) {
		t.Fatalf("list_models: %s, %v", b, err)
	}
	for _, m := range models.Models {
		if rule, _ := price.Describe(m.Path); m.Price != rule || tools[m.Tool] == nil {
			t.Errorf("list_models: %+v; want price %q and a tool of that name", m, rule)
		}
	}
}

func TestAJobIsCreatedWaitedForAndItsResultIsALink(t *testing.T) {
	s := devstacktest.Start(t)
	cs := connect(t, s, s.Token)
	res := call(t, cs, imageTool, with(smallImage, "wait_seconds", 20))
	rec := recordOf(t, res)
	if rec.Status != "completed" || rec.Result == nil || len(rec.Result.URLs) != 1 {
		t.Fatalf("after wait_seconds 20: %s", text(res))
	}
	var links []*mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l)
		}
	}
	if len(links) != 1 || links[0].URI != rec.Result.URLs[0] || links[0].MIMEType != "image/png" {
		t.Fatalf("resource links %+v; want one, of %s, image/png", links, rec.Result.URLs[0])
	}
	var fromText any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil || !reflect.DeepEqual(fromText, res.StructuredContent) {
		t.Errorf("text %s is not the structured content %v", text(res), res.StructuredContent)
	}
	resp, err := http.Get(links[0].URI)
	if err != nil {
		t.Fatal(err)
	}
	png, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("the result link answered %d with %d bytes; want a PNG", resp.StatusCode, len(png))
	}
	// The same job through REST: the same record.
	status, body := rest(t, s, s.Token, http.MethodGet, "/jobs/"+rec.JobID, "")
	var viaREST record
	if status != 200 || json.Unmarshal(body, &viaREST) != nil || viaREST.Status != "completed" {
		t.Errorf("GET /jobs/%s: %d %s", rec.JobID, status, body)
	}
	got := recordOf(t, call(t, cs, "get_job", map[string]any{"job_id": rec.JobID}))
	if got.JobID != rec.JobID || got.Status != "completed" {
		t.Errorf("get_job: %+v", got)
	}
	list := call(t, cs, "list_jobs", map[string]any{"limit": 10})
	var page struct {
		Items []record `json:"items"`
	}
	if err := json.Unmarshal([]byte(text(list)), &page); err != nil || len(page.Items) != 1 || page.Items[0].JobID != rec.JobID {
		t.Errorf("list_jobs: %s", text(list))
	}
	// Billed like any job: usage shows it.
	usage := call(t, cs, "get_usage", map[string]any{"days": 1})
	if usage.IsError || !strings.Contains(text(usage), `"total_usd":"0.030000"`) {
		t.Errorf("get_usage: %s", text(usage))
	}
	_, restStyles := rest(t, s, s.Token, http.MethodGet, "/styles?filter=user&limit=5", "")
	if styles := call(t, cs, "list_styles", map[string]any{"filter": "user", "limit": 5}); styles.IsError || text(styles) != string(restStyles) {
		t.Errorf("list_styles: %s; want what GET /styles answers: %s", text(styles), restStyles)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(out.String(), `\u0026`, "&")
}

func TestARefusedRequestIsAToolErrorWithTheRESTMessage(t *testing.T) {
	s := devstacktest.Start(t)
	cs := connect(t, s, s.Token)
	for _, args := range []map[string]any{
		with(smallImage, "colour", "red"),
		with(smallImage, "width", 5000),
		{"width": 64, "height": 64},
		with(smallImage, "style_images", []any{"ftp://example.invalid/x.png"}),
	} {
		body, _ := json.Marshal(args)
		status, restBody := rest(t, s, s.Token, http.MethodPost, "/generate/image/vendor-b/model-e-4", string(body))
		if status != http.StatusBadRequest {
			t.Fatalf("REST answered %d to %s", status, body)
		}
		res := call(t, cs, imageTool, args)
		if !res.IsError || text(res) != errorOf(t, restBody) {
			t.Errorf("%s: isError %v, %q; want the REST 400's %q", body, res.IsError, text(res), errorOf(t, restBody))
		}
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{with(smallImage, "wait_seconds", 21), "The request body is invalid: wait_seconds must be an integer between 0 and 20"},
		{with(smallImage, "wait_seconds", 1.5), "The request body is invalid: wait_seconds must be an integer between 0 and 20"},
		{with(smallImage, "wait_seconds", "5"), "The request body is invalid: wait_seconds must be an integer between 0 and 20"},
		{with(smallImage, "webhook_url", "ftp://example.invalid/hook"), "The request headers are invalid: X-Webhook-URL must be an absolute http:// or https:// URL"},
		{with(smallImage, "idempotency_key", ""), "The request headers are invalid: Idempotency-Key must have 1 to 255 characters"},
	} {
		if res := call(t, cs, imageTool, c.args); !res.IsError || text(res) != c.want {
			t.Errorf("%v: isError %v, %q; want %q", c.args, res.IsError, text(res), c.want)
		}
	}
	if res := call(t, cs, "list_jobs", map[string]any{"limit": 0}); !res.IsError || text(res) != "The query is invalid: limit must be an integer between 1 and 1000" {
		t.Errorf("list_jobs limit 0: %q", text(res))
	}
	if res := call(t, cs, "get_job", map[string]any{"id": "x"}); !res.IsError || text(res) != "The arguments are invalid: id is not a known argument" {
		t.Errorf("get_job with a wrong argument: %q", text(res))
	}
	if n := len(jobsOf(t, s, devstack.DemoWorkspace)); n != 0 {
		t.Errorf("%d jobs created by refused calls", n)
	}
}

func TestProtocolErrorsCreateNothing(t *testing.T) {
	s := devstacktest.Start(t)
	cs := connect(t, s, s.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "generate_image_model_z", Arguments: smallImage}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("an unknown tool: %v; want a protocol error", err)
	}
	create := toolCall(imageTool, smallImage)
	for _, c := range []struct {
		name   string
		body   []byte
		status int
		code   int // JSON-RPC error code, 0: not a JSON-RPC answer
	}{
		{"not JSON", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call",`), 400, -32700},
		{"not an object", []byte(`"tools/call"`), 400, -32700},
		{"a batch", []byte("[" + string(create) + "]"), 400, -32600},
		{"not JSON-RPC", []byte(`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"generate_image_model_e_4"}}`), 400, 0},
		{"over the size bound", toolCall(imageTool, with(smallImage, "prompt", strings.Repeat("p", mcpserver.MaxBodyBytes))), 413, 0},
	} {
		status, _, body := post(t, s, s.Token, c.body)
		if status != c.status {
			t.Errorf("%s: %d %s; want %d", c.name, status, body, c.status)
			continue
		}
		if c.code != 0 {
			var rpc struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct{ Code int }
			}
			if err := json.Unmarshal(body, &rpc); err != nil || rpc.JSONRPC != "2.0" || string(rpc.ID) != "null" || rpc.Error.Code != c.code {
				t.Errorf("%s: %s; want a JSON-RPC error %d with id null", c.name, body, c.code)
			}
		}
	}
	if n := len(jobsOf(t, s, devstack.DemoWorkspace)); n != 0 {
		t.Errorf("%d jobs created by protocol errors", n)
	}
}

// stall serves an input image that never arrives until the test ends (at
// most a minute): a job fetching it stays running.
func stall(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		http.NotFound(w, r)
	}))
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(done) }); srv.Close() })
	return srv.URL + "/slow.png"
}

func TestBalanceAndConcurrencyRefusalsAreToolErrorsWithTheAPIsMessages(t *testing.T) {
	s := devstacktest.Start(t)
	broke := s.Workspace(t, "ws-mcp-broke", devstacktest.USD/100, 20, 5)
	full := s.Workspace(t, "ws-mcp-full", 10*devstacktest.USD, 1, 1)

	res := call(t, connect(t, s, broke), imageTool, smallImage)
	_, restBody := rest(t, s, broke, http.MethodPost, "/generate/image/vendor-b/model-e-4", mustJSON(t, smallImage))
	if !res.IsError || text(res) != errorOf(t, restBody) || !strings.HasPrefix(text(res), "You have run out of credits.") {
		t.Errorf("out of balance: isError %v, %q; want the 402's %q", res.IsError, text(res), errorOf(t, restBody))
	}

	cs := connect(t, s, full)
	first := recordOf(t, call(t, cs, imageTool, with(smallImage, "style_images", []any{stall(t)})))
	res = call(t, cs, imageTool, smallImage)
	if !res.IsError || text(res) != "You have reached the maximum number of concurrent jobs." {
		t.Errorf("over the concurrency limit: isError %v, %q; want the 429's message", res.IsError, text(res))
	}
	if n := len(jobsOf(t, s, "ws-mcp-broke")) + len(jobsOf(t, s, "ws-mcp-full")); n != 1 {
		t.Errorf("%d jobs; want only the first of the full workspace", n)
	}
	cancelled := recordOf(t, call(t, cs, "cancel_job", map[string]any{"job_id": first.JobID}))
	if cancelled.Status != "cancelled" {
		t.Errorf("cancel_job: %+v", cancelled)
	}
	again := call(t, cs, "cancel_job", map[string]any{"job_id": first.JobID})
	if !again.IsError || text(again) != "The job has already ended; its status is cancelled." {
		t.Errorf("cancel_job of an ended job: %q; want the 409's message", text(again))
	}
}

func TestTheSameIdempotencyKeyTwiceIsOneJob(t *testing.T) {
	s := devstacktest.Start(t)
	cs := connect(t, s, s.Token)
	args := with(smallImage, "idempotency_key", "mcp-key-1")
	a := recordOf(t, call(t, cs, imageTool, args))
	b := recordOf(t, call(t, cs, imageTool, args))
	if a.JobID != b.JobID {
		t.Errorf("two jobs %s and %s for one key", a.JobID, b.JobID)
	}
	other := call(t, cs, imageTool, with(args, "prompt", "a wolf"))
	if !other.IsError || text(other) != "This Idempotency-Key was used with a different request." {
		t.Errorf("the key with other arguments: %q; want the 422's message", text(other))
	}
	if n := len(jobsOf(t, s, devstack.DemoWorkspace)); n != 1 {
		t.Errorf("%d jobs; want 1", n)
	}
	bal, err := accountsdb.New(s.Store).Balance(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if spent := bal.Reserved + bal.Spent; spent != 30_000 {
		t.Errorf("reserved + spent %d micro-USD; want one job's 30000", spent)
	}
}

func TestAnotherWorkspacesJobIsNotFound(t *testing.T) {
	s := devstacktest.Start(t)
	mine := recordOf(t, call(t, connect(t, s, s.Token), imageTool, smallImage))
	other := connect(t, s, s.Workspace(t, "ws-mcp-other", 10*devstacktest.USD, 20, 5))
	for _, tool := range []string{"get_job", "cancel_job", "wait_job"} {
		res := call(t, other, tool, map[string]any{"job_id": mine.JobID})
		if !res.IsError || text(res) != "Job not found." {
			t.Errorf("%s of another workspace's job: isError %v, %q; want Job not found.", tool, res.IsError, text(res))
		}
	}
	if res := call(t, other, "get_job", map[string]any{"job_id": "../usage"}); !res.IsError || text(res) != "Job not found." {
		t.Errorf("get_job of a path: %q", text(res))
	}
}

func TestWaitingForAJobThatFailsAnswersItsError(t *testing.T) {
	s := devstacktest.Start(t)
	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)
	cs := connect(t, s, s.Token)
	res := call(t, cs, imageTool, with(smallImage, "style_images", []any{missing.URL + "/gone.png"}, "wait_seconds", 20))
	rec := recordOf(t, res)
	if rec.Status != "failed" || rec.Error == nil || rec.Error.Code != "invalid_input" {
		t.Fatalf("got %s; want the failed record with its error", text(res))
	}
	for _, c := range res.Content {
		if _, ok := c.(*mcp.ResourceLink); ok {
			t.Errorf("a failed job has a resource link")
		}
	}
	waited := recordOf(t, call(t, cs, "wait_job", map[string]any{"job_id": rec.JobID, "timeout_seconds": 20}))
	if waited.Status != "failed" {
		t.Errorf("wait_job: %+v", waited)
	}
}

func TestAWebhookURLIsTheJobsWebhook(t *testing.T) {
	s := devstacktest.Start(t)
	hook := "http://127.0.0.1:9/hooks?a=1,b=2"
	rec := recordOf(t, call(t, connect(t, s, s.Token), imageTool, with(smallImage, "webhook_url", hook)))
	j, err := s.Store.Job(context.Background(), rec.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if j.WebhookURL != hook {
		t.Errorf("webhook URL %q; want %q byte for byte", j.WebhookURL, hook)
	}
}

// A job_id that is not a job id is the API's 404 as a tool error, for
// every tool that takes one: "." and ".." once reached the in-process
// router as /jobs/. and /jobs/.., which answered a 301 that the tools took
// for a success (an empty result).
func TestAJobIDThatIsNotAnIDIsJobNotFound(t *testing.T) {
	s := devstacktest.Start(t)
	cs := connect(t, s, s.Token)
	mine := recordOf(t, call(t, cs, imageTool, with(smallImage, "style_images", []any{stall(t)})))
	for _, id := range []string{".", "..", "./", "../jobs", mine.JobID + "/", mine.JobID + "/..", "%2e", "?x=1", "#", " "} {
		for _, tool := range []string{"get_job", "cancel_job", "wait_job"} {
			args := map[string]any{"job_id": id}
			if tool == "wait_job" {
				args["timeout_seconds"] = 1
			}
			if res := call(t, cs, tool, args); !res.IsError || text(res) != "Job not found." || res.StructuredContent != nil {
				t.Errorf("%s %q: isError %v, %q, structured %v; want a tool error: Job not found.", tool, id, res.IsError, text(res), res.StructuredContent)
			}
		}
	}
	if got := recordOf(t, call(t, cs, "get_job", map[string]any{"job_id": strings.ToUpper(mine.JobID)})); got.JobID != mine.JobID || got.Status == "cancelled" {
		t.Errorf("get_job of the id in upper case: %+v; want the job, not cancelled", got)
	}
}

// A JSON-RPC request for a method the server does not have is answered
// with a JSON-RPC error -32601 carrying the request's id, as JSON, so that
// a client reads it as the answer to its request.
func TestAnUnknownMethodIsAJSONRPCMethodNotFound(t *testing.T) {
	s := devstacktest.Start(t)
	for _, c := range []struct {
		name string
		body string
		id   string
	}{
		{"a number id", `{"jsonrpc":"2.0","id":7,"method":"tools/run","params":{}}`, "7"},
		{"a string id, no params", `{"jsonrpc":"2.0","id":"abc","method":"jobs/list"}`, `"abc"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, h, body := post(t, s, s.Token, []byte(c.body))
			var rpc struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int
					Message string
				}
			}
			if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || json.Unmarshal(body, &rpc) != nil ||
				rpc.JSONRPC != "2.0" || string(rpc.ID) != c.id || rpc.Error.Code != -32601 || !strings.HasPrefix(rpc.Error.Message, "Method not found") {
				t.Errorf("%d %s %s; want 200, a JSON-RPC error -32601 Method not found with id %s", status, h.Get("Content-Type"), body, c.id)
			}
		})
	}
	// A notification has no answer to carry it: a 400, as JSON-RPC.
	status, h, body := post(t, s, s.Token, []byte(`{"jsonrpc":"2.0","method":"notifications/nothing"}`))
	if status != http.StatusBadRequest || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || !strings.Contains(string(body), `"code":-32601`) {
		t.Errorf("an unknown notification: %d %s %s; want 400, a JSON-RPC error -32601", status, h.Get("Content-Type"), body)
	}
}
