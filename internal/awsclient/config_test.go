package awsclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"genjobs/internal/awsclient"
	"genjobs/internal/blob"
	"genjobs/internal/queue"
	"genjobs/internal/store"
)

// A Lambda function's environment: the role's credentials, the region, and
// (locally) the endpoint overrides.
func lambdaEnv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFromEnvSignsWithTheRolesCredentialsForTheRegion(t *testing.T) {
	var auth, token atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		token.Store(r.Header.Get("X-Amz-Security-Token"))
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	cfg := awsclient.FromEnv(lambdaEnv(map[string]string{
		"AWS_REGION": "eu-west-3", "AWS_ACCESS_KEY_ID": "ASIAROLE", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_SESSION_TOKEN": "session", "AWS_ENDPOINT_URL_DYNAMODB": srv.URL,
	}))
	if err := getItem(store.NewClient(cfg, awsclient.Requests.DynamoDB)); err != nil {
		t.Fatal(err)
	}
	if a, _ := auth.Load().(string); !strings.Contains(a, "Credential=ASIAROLE/") || !strings.Contains(a, "/eu-west-3/dynamodb/") {
		t.Errorf("Authorization %q; want the role's key for eu-west-3", a)
	}
	if tok, _ := token.Load().(string); tok != "session" {
		t.Errorf("security token %q; want the session token", tok)
	}
}

func TestFromEnvEndpoints(t *testing.T) {
	cfg := awsclient.FromEnv(lambdaEnv(map[string]string{
		"AWS_DEFAULT_REGION":               "us-west-2",
		"AWS_ENDPOINT_URL":                 "http://127.0.0.1:4566",
		"AWS_ENDPOINT_URL_DYNAMODB":        "http://127.0.0.1:8000",
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://127.0.0.1:5000",
	}))
	if cfg.Region != "us-west-2" {
		t.Errorf("region %q; want AWS_DEFAULT_REGION's when AWS_REGION is unset", cfg.Region)
	}
	for service, want := range map[string]string{
		"DynamoDB": "http://127.0.0.1:8000", "Secrets Manager": "http://127.0.0.1:5000", "SQS": "http://127.0.0.1:4566",
	} {
		if got := awsclient.Endpoint(cfg, service); got != want {
			t.Errorf("%s: endpoint %q; want %q", service, got, want)
		}
	}
	if got := awsclient.Endpoint(awsclient.FromEnv(lambdaEnv(nil)), "S3"); got != "" {
		t.Errorf("no overrides: endpoint %q; want AWS's own", got)
	}
	c := store.NewClient(cfg, awsclient.Requests.DynamoDB)
	if ep := c.Options().BaseEndpoint; ep == nil || *ep != "http://127.0.0.1:8000" {
		t.Errorf("DynamoDB client's endpoint %v; want AWS_ENDPOINT_URL_DYNAMODB", ep)
	}
}

func TestFromEnvWithoutCredentialsNamesTheVariables(t *testing.T) {
	cfg := awsclient.FromEnv(lambdaEnv(map[string]string{"AWS_REGION": "us-east-1"}))
	_, err := cfg.Credentials.Retrieve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("Retrieve: %v; want an error naming AWS_ACCESS_KEY_ID", err)
	}
}

// The local stack names each emulator in its configuration's sources; the
// SDK would drop them for a process's AWS_ENDPOINT_URL (a developer's shell
// pointed at another emulator), the adapters' clients must not.
func TestConfiguredEndpointsWinOverTheProcesssEndpointURL(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	cfg := aws.Config{Region: "us-east-1", ConfigSources: []any{awsclient.Endpoints{
		"DynamoDB": "http://127.0.0.1:8000", "SQS": "http://127.0.0.1:4566", "S3": "http://127.0.0.1:4566",
	}}}
	for name, ep := range map[string]*string{
		"DynamoDB": store.NewClient(cfg, awsclient.Requests.DynamoDB).Options().BaseEndpoint,
		"SQS":      queue.NewClient(cfg, awsclient.Requests.SQS).Options().BaseEndpoint,
		"S3":       blob.NewClient(cfg, awsclient.Requests.S3).Options().BaseEndpoint,
	} {
		want := cfg.ConfigSources[0].(awsclient.Endpoints)[name]
		if ep == nil || *ep != want {
			t.Errorf("%s client's endpoint %v; want %s", name, ep, want)
		}
	}
}
