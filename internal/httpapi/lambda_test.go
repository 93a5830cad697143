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
