package mcp_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"sync"
	"testing"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"genjobs/infra/local/devstack"
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

// jobReads counts the functions' DynamoDB calls that read one job's
// partition, by operation.
type jobReads struct {
	mu  sync.Mutex
	pk  string
	ops map[string]int
}

func (c *jobReads) option(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count job reads", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		var keys []map[string]types.AttributeValue
		switch p := in.Parameters.(type) {
		case *dynamodb.GetItemInput:
			keys = append(keys, p.Key)
		case *dynamodb.QueryInput:
			keys = append(keys, p.ExpressionAttributeValues)
		case *dynamodb.BatchGetItemInput:
			for _, ka := range p.RequestItems {
				keys = append(keys, ka.Keys...)
			}
		}
		c.mu.Lock()
		for _, k := range keys {
			for _, v := range k {
				if s, ok := v.(*types.AttributeValueMemberS); ok && c.pk != "" && s.Value == c.pk {
					c.ops[awsmiddleware.GetOperationName(ctx)]++
				}
			}
		}
		c.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

// count starts counting the reads of job id's partition; take ends it.
func (c *jobReads) count(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pk, c.ops = "JOB#"+id, map[string]int{}
}

func (c *jobReads) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.pk, c.ops = "", map[string]int{}
	return ops
}

// get_job answers a job's record and its details from one read of the job:
// a strongly consistent Query of its item and its request's, where it used
// to read the job twice and its request once (three round trips). The
// details route alone reads both in that one Query too, the record route
// the job's item alone.
func TestGetJobReadsTheJobOnce(t *testing.T) {
	reads := &jobReads{ops: map[string]int{}}
	s := devstacktest.Start(t, func(l *devstack.Stack) { l.FunctionAPIOptions = append(l.FunctionAPIOptions, reads.option) })
	cs := connect(t, s, s.Token)
	rec := recordOf(t, call(t, cs, imageTool, with(smallImage, "wait_seconds", 20)))
	if rec.Status != "completed" {
		t.Fatalf("the job: %+v", rec)
	}
	reads.count(rec.JobID)
	if res := call(t, cs, "get_job", map[string]any{"job_id": rec.JobID}); res.IsError || len(res.Content) != 3 {
		t.Fatalf("get_job: %+v", res)
	}
	if got := reads.take(); !maps.Equal(got, map[string]int{"Query": 1}) {
		t.Errorf("get_job read the job's partition with %v; want one Query", got)
	}
	reads.count(rec.JobID)
	if status, body := rest(t, s, s.Token, http.MethodGet, "/jobs/"+rec.JobID+"/details", ""); status != http.StatusOK {
		t.Fatalf("GET /jobs/%s/details: %d %s", rec.JobID, status, body)
	}
	if got := reads.take(); !maps.Equal(got, map[string]int{"Query": 1}) {
		t.Errorf("GET /jobs/{id}/details read the job's partition with %v; want one Query", got)
	}
	reads.count(rec.JobID)
	if status, body := rest(t, s, s.Token, http.MethodGet, "/jobs/"+rec.JobID, ""); status != http.StatusOK {
		t.Fatalf("GET /jobs/%s: %d %s", rec.JobID, status, body)
	}
	if got := reads.take(); !maps.Equal(got, map[string]int{"GetItem": 1}) {
		t.Errorf("GET /jobs/{id} read the job's partition with %v; want one GetItem", got)
	}
}
