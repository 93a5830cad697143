package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"genjobs/internal/fault"
)

// AnswerMargin is what a request keeps of its time, before the invocation's
// deadline, to answer: the handler's context ends this much earlier, so a
// dependency that does not answer in time gets a 503 to the client rather
// than a Lambda timeout (which API Gateway shows as a bare 500 or 503).
const AnswerMargin = time.Second

// LambdaHandler is what an API function hands to lambda.Start. The request
// runs under fault.Reserve(ctx, AnswerMargin). An event the adapter cannot
// turn into a request (a body that is not valid base64, a path that is not a
// URL) is the client's mistake: it gets a 400, not a Lambda error, which API
// Gateway would show as a 500.
func LambdaHandler(log *slog.Logger, h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ctx, cancel := fault.Reserve(ctx, AnswerMargin)
		defer cancel()
		ctx = context.WithValue(ctx, rawHeadersKey{}, ev.Headers)
		resp, err := adapter.ProxyWithContext(ctx, ev)
		if err != nil {
			log.Warn("unreadable request event", "request_id", ev.RequestContext.RequestID, "error", err.Error())
			return events.APIGatewayV2HTTPResponse{
				StatusCode: 400,
				Headers:    map[string]string{"Content-Type": "application/json"},
				Body:       `{"error":"The request could not be read."}`,
			}, nil
		}
		return resp, nil
	}
}

type rawHeadersKey struct{}

// rawHeader is a header's value as API Gateway delivered it in the event,
// before the api-proxy split it at commas: payload 2.0 joins repeated
// headers with commas and lower-cases names. ok is false outside Lambda.
func rawHeader(ctx context.Context, name string) (value string, ok bool) {
	h, ok := ctx.Value(rawHeadersKey{}).(map[string]string)
	if !ok {
		return "", false
	}
	if v, found := h[strings.ToLower(name)]; found {
		return v, true
	}
	for k, v := range h { // a hand-made event may keep the client's case
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", true
}
