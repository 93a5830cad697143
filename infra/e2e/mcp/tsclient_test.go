package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/testenv"
)

// The protocol's own TypeScript SDK, a client written apart from ours,
// lists the tools, creates an image job waiting for it within the call,
// downloads its result link and lists the jobs, over 127.0.0.1.
func TestTheTypeScriptSDKClient(t *testing.T) {
	node := testenv.NodePackage(t, "testdata", "@modelcontextprotocol/sdk", "the independent MCP client")
	s := devstacktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", s.URL+"/mcp")
	cmd.Dir = "testdata"
	cmd.Env = append(os.Environ(), "MCP_TOKEN="+s.Token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s", err, stderr.Bytes())
	}
	var got struct {
		Tools   []string
		Job     record
		IsError bool
		Links   []struct{ URI, Name, MimeType string }
		// Download is the first link's file.
		Download *struct {
			Status, Bytes int
			PNG           bool
		}
		Listed []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	if len(got.Tools) != 14 || !slices.Contains(got.Tools, imageTool) || !slices.Contains(got.Tools, "wait_job") {
		t.Errorf("tools %v; want the 14", got.Tools)
	}
	if got.IsError || got.Job.Status != "completed" || got.Job.Result == nil || len(got.Job.Result.URLs) != 1 {
		t.Fatalf("the created job: %+v (isError %v); want completed with one result", got.Job, got.IsError)
	}
	if len(got.Links) != 1 || got.Links[0].URI != got.Job.Result.URLs[0] || got.Links[0].MimeType != "image/png" {
		t.Errorf("links %+v; want one image/png link to %s", got.Links, got.Job.Result.URLs[0])
	}
	if d := got.Download; d == nil || d.Status != 200 || !d.PNG || d.Bytes == 0 {
		t.Errorf("the download: %+v; want 200 and a PNG", got.Download)
	}
	if !slices.Equal(got.Listed, []string{got.Job.JobID}) {
		t.Errorf("list_jobs: %v; want [%s]", got.Listed, got.Job.JobID)
	}
}
