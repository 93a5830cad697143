package apigw

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

var routes = []Route{
	{Method: "POST", Path: "/generate/{kind}/{vendor}/{model}", Function: "Generate"},
	{Method: "GET", Path: "/jobs/{id}", Function: "Jobs"},
	{Method: "GET", Path: "/jobs", Function: "Jobs"},
	{Method: "GET", Path: "/jobs/special", Function: "Special"},
	{Method: "ANY", Path: "/files/{path+}", Function: "Files"},
	{Method: "ANY", Path: "$default", Function: "Default"},
}

// echo answers with the event it got, so tests can look at it.
type recorder struct {
	last events.APIGatewayV2HTTPRequest
}

func (r *recorder) handler(name string) Handler {
	return func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		r.last = ev
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: name}, nil
	}
}

func newGateway(t *testing.T, rec *recorder, extra map[string]Handler) *Gateway {
	t.Helper()
	hs := map[string]Handler{}
	for _, r := range routes {
		hs[r.Function] = rec.handler(r.Function)
	}
	for k, v := range extra {
		hs[k] = v
	}
	g, err := New(routes, hs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func serve(g *Gateway, r *http.Request) (int, http.Header, string) {
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	return w.Code, w.Header(), w.Body.String()
}

func TestRoutesMatchLikeAPIGateway(t *testing.T) {
	rec := &recorder{}
	g := newGateway(t, rec, nil)
	for _, c := range []struct{ method, path, fn, routeKey string }{
		{"POST", "/generate/3d/vendor-g/model-g-3.1-rapid", "Generate", "POST /generate/{kind}/{vendor}/{model}"},
		{"GET", "/generate/3d/vendor-g/model-g-3.1-rapid", "Default", "$default"},
		{"GET", "/jobs/abc", "Jobs", "GET /jobs/{id}"},
		{"GET", "/jobs/special", "Special", "GET /jobs/special"},
		{"GET", "/jobs", "Jobs", "GET /jobs"},
		{"DELETE", "/jobs/abc", "Default", "$default"},
		{"PUT", "/files/a/b/c", "Files", "ANY /files/{path+}"},
		{"GET", "/jobs/a/b", "Default", "$default"},
		{"GET", "/", "Default", "$default"},
	} {
		code, _, body := serve(g, httptest.NewRequest(c.method, c.path, nil))
		if code != 200 || body != c.fn || rec.last.RouteKey != c.routeKey {
			t.Errorf("%s %s went to %s (route %s, %d); want %s (%s)", c.method, c.path, body, rec.last.RouteKey, code, c.fn, c.routeKey)
		}
	}
	serve(g, httptest.NewRequest("PUT", "/files/a/b/c", nil))
	if rec.last.PathParameters["path"] != "a/b/c" {
		t.Errorf("greedy parameter = %q", rec.last.PathParameters["path"])
	}
}

func TestEventCarriesTheRequest(t *testing.T) {
	rec := &recorder{}
	g := newGateway(t, rec, nil)
	r := httptest.NewRequest("POST", "/generate/image/vendor-b/model-e-4?a=1&a=2&b=x", strings.NewReader(`{"prompt":"x"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Add("X-Webhook-URL", "https://example.com/a,b")
	r.Header.Set("Cookie", "s=1; t=2")
	r.Header.Add("Accept", "application/json")
	r.Header.Add("Accept", "text/plain")
	serve(g, r)
	ev := rec.last
	if ev.Version != "2.0" || ev.RawPath != "/generate/image/vendor-b/model-e-4" || ev.RawQueryString != "a=1&a=2&b=x" {
		t.Errorf("event path/query: %+v", ev)
	}
	if ev.QueryStringParameters["a"] != "1,2" || ev.PathParameters["model"] != "model-e-4" {
		t.Errorf("parameters: query %v, path %v", ev.QueryStringParameters, ev.PathParameters)
	}
	// Names lower-cased, repeated lines joined with commas, cookies only in
	// their own field.
	_, cookieHeader := ev.Headers["cookie"]
	if ev.Headers["content-type"] != "application/json" || ev.Headers["x-webhook-url"] != "https://example.com/a,b" ||
		ev.Headers["accept"] != "application/json,text/plain" || cookieHeader {
		t.Errorf("headers: %v", ev.Headers)
	}
	if strings.Join(ev.Cookies, "|") != "s=1|t=2" || ev.Body != `{"prompt":"x"}` || ev.IsBase64Encoded {
		t.Errorf("cookies %v, body %q (base64 %v)", ev.Cookies, ev.Body, ev.IsBase64Encoded)
	}
	if ev.RequestContext.RequestID == "" || ev.RequestContext.HTTP.Method != "POST" || ev.RequestContext.Stage != "$default" {
		t.Errorf("request context: %+v", ev.RequestContext)
	}

	bin := httptest.NewRequest("POST", "/files/x", strings.NewReader("\x89PNG\x00"))
	bin.Header.Set("Content-Type", "image/png")
	serve(g, bin)
	if b, _ := base64.StdEncoding.DecodeString(rec.last.Body); !rec.last.IsBase64Encoded || string(b) != "\x89PNG\x00" {
		t.Errorf("a binary body must arrive base64-encoded: %q", rec.last.Body)
	}
}

func TestLambdaLimitsAndFailures(t *testing.T) {
	rec := &recorder{}
	g := newGateway(t, rec, map[string]Handler{
		"Special": func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			panic("boom")
		},
		"Jobs": func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: strings.Repeat("x", MaxPayloadBytes)}, nil
		},
		"Files": func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: base64.StdEncoding.EncodeToString([]byte{0, 1}), IsBase64Encoded: true,
				Headers: map[string]string{"Content-Type": "application/octet-stream"}, Cookies: []string{"a=b"}}, nil
		},
	})
	big := httptest.NewRequest("POST", "/generate/a/b/c", strings.NewReader(strings.Repeat("x", MaxPayloadBytes+1)))
	if code, _, body := serve(g, big); code != 413 || body != `{"message":"Request Entity Too Large"}` {
		t.Errorf("over 6 MB: %d %s", code, body)
	}
	if code, _, body := serve(g, httptest.NewRequest("GET", "/jobs/special", nil)); code != 500 || body != `{"message":"Internal Server Error"}` {
		t.Errorf("panicking function: %d %s", code, body)
	}
	if code, _, _ := serve(g, httptest.NewRequest("GET", "/jobs", nil)); code != 500 {
		t.Errorf("a response over 6 MB: %d; want 500", code)
	}
	code, h, body := serve(g, httptest.NewRequest("GET", "/files/x", nil))
	if code != 201 || body != "\x00\x01" || h.Get("Set-Cookie") != "a=b" || h.Get("Apigw-Requestid") == "" {
		t.Errorf("binary response: %d %q %v", code, body, h)
	}
}

func TestNewRefusesARouteWithoutHandler(t *testing.T) {
	if _, err := New(routes, map[string]Handler{}, slog.Default()); err == nil {
		t.Error("New accepted routes whose functions have no handler")
	}
}

// A function that has not answered by the route's integration timeout gets
// HTTP API's 503 while it still runs; one that fails, its own timeout
// included, HTTP API's 500.
func TestIntegrationTimeoutAndFunctionErrors(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stuck := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		<-release
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	}
	timedOut := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("invocation abandoned at the function's timeout")
	}
	g, err := New([]Route{
		{Method: "GET", Path: "/slow", Function: "Slow", Timeout: 50 * time.Millisecond},
		{Method: "GET", Path: "/late", Function: "Late"},
	}, map[string]Handler{"Slow": stuck, "Late": timedOut}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	code, h, body := serve(g, httptest.NewRequest("GET", "/slow", nil))
	if code != 503 || body != `{"message":"Service Unavailable"}` || h.Get("Content-Type") != "application/json" || h.Get("Apigw-Requestid") == "" {
		t.Errorf("past the integration timeout: %d %s %v", code, body, h)
	}
	if code, _, body := serve(g, httptest.NewRequest("GET", "/late", nil)); code != 500 || body != `{"message":"Internal Server Error"}` {
		t.Errorf("a timed-out function: %d %s", code, body)
	}
}
