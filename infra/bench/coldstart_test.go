package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/emulator"
)

// A probe's event goes to the function without its token, whatever the
// header's case, so that no first invocation calls anything.
func TestLoadEventDropsTheToken(t *testing.T) {
	dir := t.TempDir()
	ev := `{"version":"2.0","routeKey":"GET /jobs","headers":{"Authorization":"Bearer gjs_x","AUTHORIZATION":"x","accept":"application/json"}}`
	if err := os.WriteFile(filepath.Join(dir, "ev.json"), []byte(ev), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := loadEvent(dir, "ev.json")
	if err != nil {
		t.Fatal(err)
	}
	var got events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Headers) != 1 || got.Headers["accept"] != "application/json" || got.RouteKey != "GET /jobs" {
		t.Errorf("event sent: %s", b)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadEvent(dir, "bad.json"); err == nil || !strings.HasPrefix(err.Error(), "bad.json: ") {
		t.Errorf("a broken event: %v", err)
	}
}

// Every probe's event is a file of events/ that loads: a renamed event
// would otherwise fail the cold starts only in a whole make bench.
func TestEveryProbesEventLoads(t *testing.T) {
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range probes {
		if _, err := loadEvent(root, p.event); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The functions' environment is the template's, with its references
// filled in as a deployment's would be.
func TestTemplateDummiesFillEachReference(t *testing.T) {
	tpl := parseTemplate(t, `
Resources:
  JobsQueue: {Type: AWS::SQS::Queue}
  ResultsBucket: {Type: AWS::S3::Bucket}
  SigningKey: {Type: AWS::KMS::Key}
  Table: {Type: AWS::DynamoDB::Table}
`)
	d := templateDummies(tpl)
	for k, want := range map[string]string{
		"JobsQueue":      "https://sqs.us-east-1.amazonaws.com/000000000000/genjobs-JobsQueue",
		"JobsQueue.Arn":  "arn:aws:sqs:us-east-1:000000000000:JobsQueue",
		"ResultsBucket":  "genjobs-resultsbucket",
		"SigningKey":     "arn:aws:kms:us-east-1:000000000000:key/00000000-0000-0000-0000-000000000000",
		"SigningKey.Arn": "arn:aws:kms:us-east-1:000000000000:key/00000000-0000-0000-0000-000000000000",
		"Table":          "genjobs-Table",
		"Table.Arn":      "arn:aws:dynamodb:us-east-1:000000000000:Table",
		"AWS::Region":    "us-east-1",
		"AWS::StackName": "genjobs",
		"AppUrl":         "https://app.example.com",
	} {
		if d[k] != want {
			t.Errorf("%s = %q, want %q", k, d[k], want)
		}
	}
}
