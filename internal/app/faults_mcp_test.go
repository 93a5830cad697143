package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"genjobs/internal/app/mcpfn"
	"genjobs/internal/billing"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/job"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/testenv"
)

// mcpCall sends one JSON-RPC tools/call to the MCP function through API
// Gateway's event and the Lambda adapter, as an MCP client does.
func (s *stack) mcpCall(h http.Handler, tool string, args map[string]any) answer {
	s.t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
	defer cancel()
	req := httptest.NewRequest("POST", "https://api.test/mcp", strings.NewReader(string(body))).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := lambdatest.Serve(h, req)
	return answer{rec.Code, rec.Header(), rec.Body.String()}
}

// toolResult reads a tools/call answer: 200, a JSON-RPC result (not a
// protocol error), its isError and first text.
func toolResult(t *testing.T, out answer) (isError bool, text string) {
	t.Helper()
	var rpc struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if out.StatusCode != http.StatusOK || json.Unmarshal([]byte(out.Body), &rpc) != nil || rpc.Result == nil || len(rpc.Result.Content) == 0 {
		t.Fatalf("%d %s; want 200 and a tool result", out.StatusCode, out.Body)
	}
	return rpc.Result.IsError, rpc.Result.Content[0].Text
}

const unavailableText = "The service is temporarily unavailable; retry shortly."

var smallImageArgs = map[string]any{"prompt": "a cat", "width": 64, "height": 64}

// An MCP tool whose table read or write fails, or hangs until the
// invocation's deadline, is a tool error with the API's outage message
// (never an empty answer), logged with the request id and DynamoDB's code;
// nothing of a refused creation or cancellation is written, and the same
// call succeeds once the table is back. An outage of the token lookup,
// before any JSON-RPC is read, is the API's 503 with Retry-After.
func TestMCPToolsAnswerAnOutageAsAToolError(t *testing.T) {
	cases := []struct {
		name  string
		tool  string
		args  func(s *stack) map[string]any
		op    string
		where string
		fault testenv.Fault
		check func(t *testing.T, s *stack, args map[string]any) // nothing half-written
	}{
		{"creation", "generate_image_model_e_4", func(*stack) map[string]any { return smallImageArgs },
			"TransactWriteItems", "", testenv.Unavailable, func(t *testing.T, s *stack, _ map[string]any) {
				page, err := s.store.ListJobs(context.Background(), "ws_a", job.Query{Limit: 10})
				if err != nil || len(page.Jobs) != 0 {
					t.Errorf("jobs after a refused creation: %d, %v; want none", len(page.Jobs), err)
				}
				wantBalance(t, s, funded, 0)
			}},
		{"creation whose write hangs", "generate_image_model_e_4", func(*stack) map[string]any { return smallImageArgs },
			"TransactWriteItems", "", testenv.Freeze, func(t *testing.T, s *stack, _ map[string]any) {
				page, err := s.store.ListJobs(context.Background(), "ws_a", job.Query{Limit: 10})
				if err != nil || len(page.Jobs) != 0 {
					t.Errorf("jobs after a refused creation: %d, %v; want none", len(page.Jobs), err)
				}
				wantBalance(t, s, funded, 0)
			}},
		{"creation with an idempotency key", "generate_image_model_e_4", func(*stack) map[string]any {
			return map[string]any{"prompt": "a cat", "width": 64, "height": 64, "idempotency_key": "k-1"}
		}, "TransactWriteItems", "", testenv.Throttle, func(t *testing.T, s *stack, _ map[string]any) {
			page, err := s.store.ListJobs(context.Background(), "ws_a", job.Query{Limit: 10})
			if err != nil || len(page.Jobs) != 0 {
				t.Errorf("jobs after a refused creation: %d, %v; want none", len(page.Jobs), err)
			}
		}},
		// get_job reads the job and its request in one Query.
		{"get_job", "get_job", func(s *stack) map[string]any { return map[string]any{"job_id": s.queuedJob("").ID} },
			"Query", "", testenv.Unavailable, nil},
		{"wait_job", "wait_job", func(s *stack) map[string]any {
			return map[string]any{"job_id": s.queuedJob("").ID, "timeout_seconds": 1}
		},
			"GetItem", `{"S":"JOB"}`, testenv.Drop, nil},
		{"cancel_job", "cancel_job", func(s *stack) map[string]any { return map[string]any{"job_id": s.queuedJob("").ID} },
			"TransactWriteItems", "", testenv.Unavailable, func(t *testing.T, s *stack, args map[string]any) {
				j, err := s.store.Job(context.Background(), args["job_id"].(string))
				if err != nil || j.Status != job.Queued {
					t.Errorf("the job after a refused cancellation: %v, %v; want it queued", j, err)
				}
			}},
		{"list_jobs", "list_jobs", func(*stack) map[string]any { return map[string]any{"limit": 5} },
			"Query", "", testenv.Unavailable, nil},
		{"get_usage", "get_usage", func(*stack) map[string]any { return map[string]any{"days": 2} },
			"Query", "", testenv.Freeze, nil},
		{"list_styles", "list_styles", func(*stack) map[string]any { return map[string]any{"filter": "all"} },
			"Query", "", testenv.Unavailable, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t)
			h := s.build(mcpfn.Build)
			// The first call builds the tools and warms the token cache,
			// so that the fault meets the tool's own call.
			if out := s.mcpCall(h, "list_models", nil); out.StatusCode != http.StatusOK {
				t.Fatalf("list_models: %d %s", out.StatusCode, out.Body)
			}
			args := c.args(s)
			s.table.SetIf(c.op, c.where, c.fault)
			out := s.mcpCall(h, c.tool, args)
			if isError, text := toolResult(t, out); !isError || text != unavailableText {
				t.Errorf("during the outage: isError %v, %q; want a tool error: %s", isError, text, unavailableText)
			}
			if s.table.Failed(c.op) == 0 {
				t.Errorf("no %s call was failed: the answer came from elsewhere", c.op)
			}
			if len(s.logs.lines(`"request_id":"`+out.RequestID()+`"`, "dependency unavailable", `"code":"`)) == 0 {
				t.Errorf("no log line with the request id and the error code:\n%s", s.logs.lines())
			}
			if c.check != nil {
				c.check(t, s, args)
			}
			s.table.Clear()
			if isError, text := toolResult(t, s.mcpCall(h, c.tool, args)); isError {
				t.Errorf("after the outage: %q; want a result", text)
			}
		})
	}
	t.Run("token lookup", func(t *testing.T) {
		t.Parallel()
		s := newStack(t)
		h := s.build(mcpfn.Build)
		s.table.SetIf("GetItem", "TOKEN#", testenv.Unavailable)
		out := s.mcpCall(h, "generate_image_model_e_4", smallImageArgs)
		want503(t, "the token lookup's outage", out)
		if s.table.Failed("GetItem") == 0 {
			t.Errorf("no GetItem was failed: the 503 came from elsewhere")
		}
		page, err := s.store.ListJobs(context.Background(), "ws_a", job.Query{Limit: 10})
		if err != nil || len(page.Jobs) != 0 {
			t.Errorf("jobs: %d, %v; want none", len(page.Jobs), err)
		}
	})
}

func wantBalance(t *testing.T, s *stack, available, reserved billing.Micros) {
	t.Helper()
	b, err := accountsdb.New(s.store).Balance(context.Background(), "ws_a")
	if err != nil || b.Available != available || b.Reserved != reserved {
		t.Errorf("balance %+v, %v; want %d available and %d reserved", b, err, available, reserved)
	}
}
