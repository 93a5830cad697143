package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/httpapi"
)

// A request ends AnswerMargin before the invocation: time enough to answer
// 503 when a dependency has used the rest.
func TestARequestKeepsTimeToAnswerBeforeTheInvocationsDeadline(t *testing.T) {
	var got time.Time
	var ok bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = r.Context().Deadline()
		w.WriteHeader(http.StatusNoContent)
	})
	deadline := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/x", RequestContext: events.APIGatewayV2HTTPRequestContext{
		HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/x"},
	}}
	out, err := httpapi.LambdaHandler(slog.New(slog.NewJSONHandler(io.Discard, nil)), h)(ctx, ev)
	if err != nil || out.StatusCode != http.StatusNoContent {
		t.Fatalf("%d, %v", out.StatusCode, err)
	}
	if want := deadline.Add(-httpapi.AnswerMargin); !ok || !got.Equal(want) {
		t.Errorf("the handler's deadline %v (%v); want %v", got, ok, want)
	}
}

// A path with an empty, "." or ".." segment reaching a function (API
// Gateway passes the raw path on) gets the JSON 404 of every unknown path,
// not http.ServeMux's 307 with an HTML body.
func TestUncleanPathsAreJSONNotFound(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := httpapi.LambdaHandler(slog.New(slog.NewJSONHandler(io.Discard, nil)), httpapi.Middleware(slog.New(slog.NewJSONHandler(io.Discard, nil)), mux))
	for _, path := range []string{"//jobs", "/./jobs", "/x/../jobs", "/jobs/."} {
		ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path, RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path},
		}}
		out, err := h(context.Background(), ev)
		if err != nil || out.StatusCode != http.StatusNotFound || out.Headers["Content-Type"] != "application/json" || out.Body != `{"error":"Not found."}` {
			t.Errorf("GET %s: %d %v %s (%v); want 404 {\"error\":\"Not found.\"}", path, out.StatusCode, out.Headers, out.Body, err)
		}
	}
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/jobs", RequestContext: events.APIGatewayV2HTTPRequestContext{
		HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/jobs"},
	}}
	if out, _ := h(context.Background(), ev); out.StatusCode != http.StatusNoContent {
		t.Errorf("GET /jobs: %d", out.StatusCode)
	}
}
