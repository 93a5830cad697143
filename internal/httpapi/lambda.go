package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"genjobs/internal/fault"
)

// AnswerMargin is what a request keeps of its time, before the invocation's
// deadline, to answer: the handler's context ends this much earlier, so a
// dependency that does not answer in time gets a 503 to the client rather
// than a Lambda timeout (which API Gateway shows as a bare 500 or 503).
const AnswerMargin = time.Second

// LambdaHandler is what an API function hands to lambda.Start: it turns
// API Gateway's payload 2.0 event into the request h would get from
// net/http, and h's answer into the event's response.
//
// The api-proxy builds the request (URL, body, the event in the context)
// and collects the answer; its headers are replaced by the event's own
// values (eventHeader), because the proxy splits every value at commas, so
// that r.Header.Get("webhook-signature") of "v1,<sig>" would read "v1".
//
// The request runs under fault.Reserve(ctx, AnswerMargin). An event the
// adapter cannot turn into a request (a body that is not valid base64, a
// path that is not a URL) is the client's mistake: it gets a 400, not a
// Lambda error, which API Gateway would show as a 500.
func LambdaHandler(log *slog.Logger, h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var accessor core.RequestAccessorV2
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ctx, cancel := fault.Reserve(ctx, AnswerMargin)
		defer cancel()
		r, err := accessor.EventToRequestWithContext(ctx, ev)
		if err != nil {
			log.Warn("unreadable request event", "request_id", ev.RequestContext.RequestID, "error", err.Error())
			return events.APIGatewayV2HTTPResponse{
				StatusCode: 400,
				Headers:    map[string]string{"Content-Type": "application/json"},
				Body:       `{"error":"The request could not be read."}`,
			}, nil
		}
		r.Header = eventHeader(ev)
		w := &answer{ProxyResponseWriterV2: core.NewProxyResponseWriterV2()}
		h.ServeHTTP(w, r)
		if !w.answered {
			w.WriteHeader(http.StatusOK) // as net/http answers a handler that wrote nothing
		}
		return w.GetProxyResponse()
	}
}

// eventHeader is the event's headers as net/http would hand them to a
// handler: canonical names, each value exactly as API Gateway delivered it
// (it lower-cases names and joins a repeated header's lines with commas),
// the cookies of the event's own field as one Cookie header, and Host
// moved to r.Host (the proxy sets it from the event's domain).
func eventHeader(ev events.APIGatewayV2HTTPRequest) http.Header {
	h := make(http.Header, len(ev.Headers)+1)
	for name, value := range ev.Headers {
		h[textproto.CanonicalMIMEHeaderKey(name)] = []string{value}
	}
	delete(h, "Host")
	if len(ev.Cookies) > 0 {
		h["Cookie"] = []string{strings.Join(ev.Cookies, "; ")}
	}
	return h
}

// answer notes whether the handler answered at all: the proxy's writer
// refuses to build a response without a status.
type answer struct {
	*core.ProxyResponseWriterV2
	answered bool
}

func (a *answer) WriteHeader(status int) {
	a.answered = true
	a.ProxyResponseWriterV2.WriteHeader(status)
}

func (a *answer) Write(b []byte) (int, error) {
	a.answered = true
	return a.ProxyResponseWriterV2.Write(b)
}
