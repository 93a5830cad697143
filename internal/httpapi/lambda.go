package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// LambdaHandler is what an API function hands to lambda.Start. An event the
// adapter cannot turn into a request (a body that is not valid base64, a
// path that is not a URL) is the client's mistake: it gets a 400, not a
// Lambda error, which API Gateway would show as a 500.
func LambdaHandler(log *slog.Logger, h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
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
