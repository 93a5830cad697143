package mcp_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"genjobs/infra/local/devstack/devstacktest"
)

// get_job answers the job's record (structured content and the first text
// block) and, as its second content block, the job's details: what
// GET /jobs/{id}/details answers, read in process as the caller. The result
// files' links follow.
func TestGetJobAddsTheJobsDetailsAsItsSecondBlock(t *testing.T) {
	s := devstacktest.Start(t)
	cs := connect(t, s, s.Token)
	rec := recordOf(t, call(t, cs, imageTool, with(smallImage, "wait_seconds", 20)))
	if rec.Status != "completed" {
		t.Fatalf("the job: %+v", rec)
	}
	res := call(t, cs, "get_job", map[string]any{"job_id": rec.JobID})
	if got := recordOf(t, res); got.JobID != rec.JobID || got.Status != "completed" {
		t.Fatalf("get_job's record: %+v", got)
	}
	if len(res.Content) != 3 {
		t.Fatalf("get_job has %d content blocks; want the record, the details and one result link", len(res.Content))
	}
	first, ok0 := res.Content[0].(*mcp.TextContent)
	second, ok1 := res.Content[1].(*mcp.TextContent)
	_, ok2 := res.Content[2].(*mcp.ResourceLink)
	if !ok0 || !ok1 || !ok2 {
		t.Fatalf("get_job's blocks are %T, %T, %T; want text, text, resource link", res.Content[0], res.Content[1], res.Content[2])
	}
	var fromFirst any
	if json.Unmarshal([]byte(first.Text), &fromFirst) != nil || !reflect.DeepEqual(fromFirst, res.StructuredContent) {
		t.Errorf("the first block is not the record: %s", first.Text)
	}
	status, body := rest(t, s, s.Token, http.MethodGet, "/jobs/"+rec.JobID+"/details", "")
	var viaREST, viaMCP map[string]any
	if status != http.StatusOK || json.Unmarshal(body, &viaREST) != nil {
		t.Fatalf("GET /jobs/%s/details: %d %s", rec.JobID, status, body)
	}
	if err := json.Unmarshal([]byte(second.Text), &viaMCP); err != nil || !reflect.DeepEqual(viaMCP, viaREST) {
		t.Errorf("the second block %s; want the details GET /jobs/{id}/details answers: %s", second.Text, body)
	}
	if viaMCP["job_id"] != rec.JobID || viaMCP["source"] != "mcp" || viaMCP["endpoint"] != "/generate/image/vendor-b/model-e-4" {
		t.Errorf("the details: %s; want this job's, made through MCP with model-e-4", second.Text)
	}
	// cancel_job answers the record alone.
	if res := call(t, cs, "cancel_job", map[string]any{"job_id": rec.JobID}); len(res.Content) > 1 {
		if _, ok := res.Content[1].(*mcp.TextContent); ok {
			t.Errorf("cancel_job has a second text block: %+v", res.Content)
		}
	}
}
