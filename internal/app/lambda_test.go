package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"genjobs/internal/app"
	"genjobs/internal/app/notfoundfn"
	"genjobs/internal/httpapi/lambdatest"
)

type apiHandler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// lambdaInvocation is the context aws-lambda-go gives a handler: the request id,
// and the X-Ray header under the key it uses.
func lambdaInvocation(requestID, traceHeader string) context.Context {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID})
	//lint:ignore SA1029 aws-lambda-go's own key for the trace header
	return context.WithValue(ctx, "x-amzn-trace-id", traceHeader)
}

func lines(t *testing.T, out *bytes.Buffer) (logs, emf []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("a line that is not JSON: %s", sc.Bytes())
		}
		if _, ok := v["_aws"]; ok {
			emf = append(emf, v)
		} else {
			logs = append(logs, v)
		}
	}
	return logs, emf
}

func notFound(t *testing.T, env map[string]string) (apiHandler, *bytes.Buffer) {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	d, err := app.Config(getenv)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	h, err := app.Lambda("notfound", app.Function{HTTP: notfoundfn.Build}, d, &out, getenv)
	if err != nil {
		t.Fatal(err)
	}
	return h.(apiHandler), &out
}

// An operator reading a function's logs finds, on every line written
// during an invocation, the Lambda request id (as in Lambda's START and
// REPORT lines), the X-Ray trace id, and whether it was a cold start, as
// AWS Lambda Powertools writes them; the first invocation also counts a
// ColdStart metric. The request line of the HTTP middleware is logged
// without the call's context, as most of the service's lines are.
func TestEveryLogLineCarriesTheInvocation(t *testing.T) {
	h, out := notFound(t, nil)
	req := lambdatest.Event(httptest.NewRequest("GET", "/nowhere", nil))
	for i, c := range []struct {
		id, root string
		cold     bool
	}{
		{"req-1", "1-5759e988-bd862e3fe1be46a994272793", true},
		{"req-2", "1-5759e988-bd862e3fe1be46a994272794", false},
	} {
		resp, err := h(lambdaInvocation(c.id, "Root="+c.root+";Parent=53995c3f42cd8ad8;Sampled=1"), req)
		if err != nil || resp.StatusCode != 404 {
			t.Fatalf("invocation %d: %d, %v; want 404", i, resp.StatusCode, err)
		}
		logs, emf := lines(t, out)
		if len(logs) == 0 {
			t.Fatalf("invocation %d wrote no log line", i)
		}
		for _, l := range logs {
			if l["function_request_id"] != c.id || l["xray_trace_id"] != c.root || l["cold_start"] != c.cold {
				t.Errorf("invocation %d: line %v; want function_request_id %s, xray_trace_id %s, cold_start %t", i, l, c.id, c.root, c.cold)
			}
		}
		coldStarts := 0
		for _, m := range emf {
			if m["ColdStart"] == 1.0 && m["Function"] == "notfound" {
				coldStarts++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[c.cold]; coldStarts != want {
			t.Errorf("invocation %d: %d ColdStart metrics (%v); want %d", i, coldStarts, emf, want)
		}
	}
}

// The level is Lambda's LoggingConfig's (AWS_LAMBDA_LOG_LEVEL), not the
// code's: at WARN the request lines are dropped, and the metrics' lines say
// WARN so that Lambda's filter, which reads a line without a level as INFO,
// keeps them.
func TestTheLogLevelIsLambdas(t *testing.T) {
	req := lambdatest.Event(httptest.NewRequest("GET", "/x", nil))
	for _, c := range []struct {
		level     string
		wantLines bool
		emfLevel  string
	}{{"", true, "INFO"}, {"DEBUG", true, "INFO"}, {"WARN", false, "WARN"}, {"ERROR", false, "ERROR"}} {
		h, out := notFound(t, map[string]string{"AWS_LAMBDA_LOG_LEVEL": c.level})
		if _, err := h(lambdaInvocation("req-1", ""), req); err != nil {
			t.Fatal(err)
		}
		logs, emf := lines(t, out)
		if got := len(logs) > 0; got != c.wantLines {
			t.Errorf("AWS_LAMBDA_LOG_LEVEL=%q: info lines written %t (%v); want %t", c.level, got, logs, c.wantLines)
		}
		if len(emf) != 1 || emf[0]["level"] != c.emfLevel {
			t.Errorf("AWS_LAMBDA_LOG_LEVEL=%q: metric lines %v; want one with level %s", c.level, emf, c.emfLevel)
		}
	}
}
