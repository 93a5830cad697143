package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"genjobs/internal/app/consolefn"
	"genjobs/internal/awsclient"
	"genjobs/internal/emulator"
	"genjobs/internal/member"
	"genjobs/internal/store/sessionsdb"
	"genjobs/internal/testenv"
)

// When Cognito cannot be reached for a session's 5-minute re-check, the
// session keeps working until its last good check is 30 minutes old, then
// answers 503 with Retry-After (the session kept, for when Cognito is
// back); a disabled person cannot work on through a long outage.
func TestASessionWhosePersonCannotBeRecheckedWorksForTheGraceThen503(t *testing.T) {
	c := newConsoleStack(t)
	// Cognito at a closed loopback port: every call fails to connect.
	c.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{
		"DynamoDB": c.table.URL, "SQS": c.queues.URL, "S3": c.queues.URL, "KMS": testenv.MotoEndpoint(),
		"Secrets Manager": testenv.MotoEndpoint(), "Cognito Identity Provider": "http://127.0.0.1:1",
	})
	c.h = c.build(consolefn.Build)
	hash := member.HashSecret(c.cookie)
	ctx := context.Background()

	if err := sessionsdb.New(c.store).MarkSessionChecked(ctx, hash, time.Now().Add(-member.RecheckEvery-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if out := c.visit("GET", "/app/settings/api-tokens", nil); out.StatusCode != http.StatusOK {
		t.Fatalf("a due re-check that cannot reach Cognito, within the grace: %d; want the page", out.StatusCode)
	}
	if len(c.logs.lines("re-check of the session's person failed")) == 0 {
		t.Errorf("the failed re-check is not logged:\n%s", c.logs.lines())
	}

	if err := sessionsdb.New(c.store).MarkSessionChecked(ctx, hash, time.Now().Add(-member.RecheckGrace-time.Minute)); err != nil {
		t.Fatal(err)
	}
	out := c.visit("GET", "/app/settings/api-tokens", nil)
	if out.StatusCode != http.StatusServiceUnavailable || out.Headers.Get("Retry-After") == "" || !strings.Contains(out.Body, "cannot be confirmed") {
		t.Fatalf("past the grace: %d, Retry-After %q; want 503 with Retry-After\n%s", out.StatusCode, out.Headers.Get("Retry-After"), out.Body)
	}
	if _, err := sessionsdb.New(c.store).Session(ctx, hash, time.Now()); err != nil {
		t.Errorf("the session was ended by an outage: %v", err)
	}
}
