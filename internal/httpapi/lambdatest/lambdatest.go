// Package lambdatest serves an HTTP handler in a test the way AWS serves it:
// behind API Gateway's HTTP API, through the same Lambda adapter as in AWS.
// Test every route a Lambda function serves through it, never by calling
// the handler's ServeHTTP directly: what reaches a handler through Lambda
// differs from what net/http gives it, and only this path shows it.
//
// A request goes through three steps, both ways:
//
//  1. API Gateway's conversion (package apigw, the one `make run` serves
//     through): header names lower-cased, repeated headers joined
//     with commas, cookies in the event's cookies field, the raw query
//     string, a body that is not text sent base64 with isBase64Encoded,
//     Lambda's 6 MB payload limit;
//  2. httpapi.LambdaHandler, the adapter every API function hands to
//     lambda.Start, which turns the event into an http.Request for the
//     handler and its answer into the event's response;
//  3. API Gateway's answer to the client: the response's headers, a
//     Set-Cookie line per cookie, a base64 body decoded, a function error
//     as 500 {"message":"Internal Server Error"}.
//
// What a handler reads then is what it reads in AWS: every header whole
// (a Standard Webhooks or Stripe-Signature value with its commas), a
// repeated header as one comma-joined value, the cookies of a browser's
// Cookie header, a form body (application/x-www-form-urlencoded travels as
// text), an image body byte for byte; and the client gets each Set-Cookie
// the handler wrote.
//
// Use Handler where a test serves a handler (httptest.NewServer or
// ServeHTTP), Serve for one request, Event to look at the event itself:
//
//	srv := httptest.NewServer(lambdatest.Handler(httpapi.Middleware(log, h.Routes())))
//	rec := lambdatest.Serve(mux, httptest.NewRequest("GET", "/jobs?limit=5", nil))
package lambdatest

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/apigw"
)

// route sends every request to the one function: a handler's own mux does
// the routing (API Gateway's route matching is the gateway's own test).
var route = apigw.Route{Method: "ANY", Path: "$default", Function: "Function"}

// Handler serves h as a Lambda function behind the HTTP API: each request
// is converted to a payload 2.0 event, run through httpapi.LambdaHandler
// and its response converted back, as in AWS. The request's context is the
// invocation's: a deadline on it plays the function's timeout (the handler
// gets httpapi.AnswerMargin less).
func Handler(h http.Handler) http.Handler {
	log := slog.New(slog.DiscardHandler)
	g, err := apigw.New([]apigw.Route{route}, map[string]apigw.Handler{route.Function: httpapi.LambdaHandler(log, h)}, log)
	if err != nil {
		panic(err) // the one route has its handler
	}
	return g
}

// Serve answers one request as Handler(h) would.
func Serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	Handler(h).ServeHTTP(rec, r)
	return rec
}

// Event is the event API Gateway would send a function for r. It reads r's
// body and leaves it readable again.
func Event(r *http.Request) events.APIGatewayV2HTTPRequest {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return apigw.Event(r, body, route, nil, "lambdatest")
}
