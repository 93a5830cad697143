package mcp_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"genjobs/infra/local/devstack/devstacktest"
)

// BenchmarkGetJobToolAgainstREST reads one job b.N times each way on one
// local stack, through API Gateway's stand-in and the Lambda adapter,
// interleaved so both meet the same load: the get_job tool (one MCP
// tools/call of the SDK's client) and GET /jobs/{id}. It reports each
// way's p50 and p99 and the ratio of the p50s.
//
//	go run ./infra/local exec -- go test -run '^$' -bench GetJobTool -benchtime 300x ./infra/e2e/mcp/
func BenchmarkGetJobToolAgainstREST(b *testing.B) {
	s := devstacktest.Start(b)
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	hc := &http.Client{Transport: bearer{s.Token}, Timeout: 30 * time.Second}
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	created, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: imageTool, Arguments: with(smallImage, "wait_seconds", 20)})
	if err != nil || created.IsError {
		b.Fatalf("create: %v %v", err, created)
	}
	id := created.StructuredContent.(map[string]any)["job_id"].(string)
	var tool, rest []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_job", Arguments: map[string]any{"job_id": id}})
		if err != nil || res.IsError {
			b.Fatalf("get_job: %v %v", err, res)
		}
		tool = append(tool, time.Since(start))

		start = time.Now()
		resp, err := hc.Get(s.URL + "/jobs/" + id)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("GET /jobs/%s: %v %v", id, err, resp)
		}
		resp.Body.Close()
		rest = append(rest, time.Since(start))
	}
	b.StopTimer()
	p := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(tool, 0.5), "tool-p50-ms")
	b.ReportMetric(p(tool, 0.99), "tool-p99-ms")
	b.ReportMetric(p(rest, 0.5), "rest-p50-ms")
	b.ReportMetric(p(rest, 0.99), "rest-p99-ms")
	b.ReportMetric(p(tool, 0.5)/p(rest, 0.5), "p50-ratio")
	b.ReportMetric(0, "ns/op")
}
