// Package apigw plays API Gateway's HTTP API (payload format 2.0) on one
// machine, the way `sam local start-api` does: each request is matched to a
// route of template.yaml, turned into an APIGatewayV2HTTPRequest and handed
// to that route's function handler; the handler's response becomes the
// HTTP response. Lambda's 6 MB payload limit is enforced both ways. As HTTP
// API does, it answers a function error (a timed-out invocation included)
// with 500 {"message":"Internal Server Error"}, and a function that has not
// answered within the route's integration timeout (TimeoutInMillis, 30 s by
// default) with 503 {"message":"Service Unavailable"}. The local stack
// serves the API through it, and package lambdatest serves a handler in a
// test through it.
package apigw

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Handler is a Lambda function handler for HTTP API events.
type Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// MaxPayloadBytes is Lambda's limit on a synchronous invocation's event and
// on its response.
const MaxPayloadBytes = 6 * 1024 * 1024

// Route is an HTTP API route: the method (or ANY) and the path with its
// {param} and {param+} segments, or "$default".
type Route struct {
	Method   string
	Path     string
	Function string
	// Timeout is the integration timeout: the event's TimeoutInMillis, else
	// IntegrationTimeout, HTTP API's default and maximum.
	Timeout time.Duration
}

// IntegrationTimeout is how long an HTTP API waits for a Lambda
// integration unless the route says less (TimeoutInMillis, 50..30000).
const IntegrationTimeout = 30 * time.Second

// Key is the route key as API Gateway writes it: "GET /jobs/{id}" or "$default".
func (r Route) Key() string {
	if r.Path == "$default" {
		return "$default"
	}
	return r.Method + " " + r.Path
}

// Gateway routes HTTP requests to function handlers.
type Gateway struct {
	routes   []Route
	handlers map[string]Handler
	log      *slog.Logger
}

// New builds a gateway for routes; every routed function needs a handler.
func New(routes []Route, handlers map[string]Handler, log *slog.Logger) (*Gateway, error) {
	for _, r := range routes {
		if handlers[r.Function] == nil {
			return nil, fmt.Errorf("route %s goes to %s, which has no handler", r.Key(), r.Function)
		}
	}
	return &Gateway{routes: routes, handlers: handlers, log: log}, nil
}

// Match finds the route API Gateway would pick: the most specific path
// (literal segments beat {param}, which beats {greedy+}) whose method is
// the request's or ANY, else $default. ok is false when nothing matches.
func (g *Gateway) Match(method, path string) (route Route, params map[string]string, ok bool) {
	best := -1
	for _, r := range g.routes {
		if r.Path == "$default" || (r.Method != method && r.Method != "ANY") {
			continue
		}
		p, score, matched := matchPath(r.Path, path)
		if !matched {
			continue
		}
		if r.Method == method {
			score++ // an exact method beats ANY on the same path
		}
		if score > best {
			best, route, params = score, r, p
		}
	}
	if best >= 0 {
		return route, params, true
	}
	for _, r := range g.routes {
		if r.Path == "$default" {
			return r, nil, true
		}
	}
	return Route{}, nil, false
}

// matchPath matches a route path against a request path; the score ranks
// specificity.
func matchPath(pattern, path string) (map[string]string, int, bool) {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	// One slash off each end: an empty segment (//jobs) matches nothing,
	// as in API Gateway, rather than a route that would redirect it.
	xs := strings.Split(strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/"), "/")
	params := map[string]string{}
	score := 0
	for i, seg := range ps {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "+}") {
			if i >= len(xs) {
				return nil, 0, false
			}
			params[seg[1:len(seg)-2]] = strings.Join(xs[i:], "/")
			return params, score, true
		}
		if i >= len(xs) {
			return nil, 0, false
		}
		switch {
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}"):
			if xs[i] == "" {
				return nil, 0, false
			}
			params[seg[1:len(seg)-1]] = xs[i]
			score += 2
		case seg == xs[i]:
			score += 3
		default:
			return nil, 0, false
		}
	}
	if len(xs) != len(ps) {
		return nil, 0, false
	}
	return params, score, true
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := newRequestID()
	w.Header().Set("Apigw-Requestid", id)
	route, params, ok := g.Match(r.Method, r.URL.Path)
	if !ok {
		gatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayloadBytes+1))
	if err != nil {
		gatewayError(w, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > MaxPayloadBytes {
		gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	ev := Event(r, body, route, params, id)
	if b, _ := json.Marshal(ev); len(b) > MaxPayloadBytes {
		gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	start := time.Now()
	resp, err := g.invoke(r.Context(), route, ev)
	switch {
	case errors.Is(err, errIntegrationTimeout):
		g.log.Error("integration timed out", "function", route.Function, "request_id", id, "timeout", route.Timeout)
		gatewayError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	case err != nil && r.Context().Err() != nil:
		g.log.Info("the client hung up before the function answered", "function", route.Function, "request_id", id)
		return
	case err != nil:
		// A function error, its timeout included: HTTP API's 500.
		g.log.Error("function failed", "function", route.Function, "request_id", id, "error", err.Error())
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	if b, _ := json.Marshal(resp); len(b) > MaxPayloadBytes {
		g.log.Error("response over Lambda's payload limit", "function", route.Function, "request_id", id, "bytes", len(b))
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	g.log.Debug("invoked", "function", route.Function, "route", route.Key(), "status", resp.StatusCode, "duration", time.Since(start))
	writeResponse(w, resp)
}

// errIntegrationTimeout: the route's function did not answer within the
// route's integration timeout.
var errIntegrationTimeout = errors.New("integration timeout")

// invoke calls the route's handler and waits for it at most the route's
// integration timeout (errIntegrationTimeout), or until the client hangs up
// (ctx's error). A panic is an invocation error, not a crash of the whole
// stack. The function's own timeout is the handler's business (triggers.HTTP
// plays Lambda's); a handler left behind runs on until it returns.
func (g *Gateway) invoke(ctx context.Context, route Route, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	type result struct {
		resp events.APIGatewayV2HTTPResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		resp, err := g.handlers[route.Function](ctx, ev)
		done <- result{resp, err}
	}()
	timeout := route.Timeout
	if timeout <= 0 {
		timeout = IntegrationTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-t.C:
		return events.APIGatewayV2HTTPResponse{}, errIntegrationTimeout
	case <-ctx.Done():
		return events.APIGatewayV2HTTPResponse{}, ctx.Err()
	}
}

// Event builds the payload 2.0 event API Gateway would send for r.
func Event(r *http.Request, body []byte, route Route, params map[string]string, requestID string) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	var cookies []string
	for name, values := range r.Header {
		if strings.EqualFold(name, "Cookie") {
			for _, v := range values {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		// API Gateway lower-cases names and joins repeated headers with commas.
		headers[strings.ToLower(name)] = strings.Join(values, ",")
	}
	host := r.Host
	headers["host"] = host
	if len(body) > 0 {
		headers["content-length"] = fmt.Sprint(len(body))
	}
	query := map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	sourceIP, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		sourceIP = r.RemoteAddr
	}
	now := time.Now().UTC()
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       route.Key(),
		RawPath:        r.URL.EscapedPath(),
		RawQueryString: r.URL.RawQuery,
		Cookies:        cookies,
		Headers:        headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     route.Key(),
			AccountID:    "000000000000",
			Stage:        "$default",
			RequestID:    requestID,
			APIID:        "local",
			DomainName:   host,
			DomainPrefix: strings.Split(host, ".")[0],
			Time:         now.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(query) > 0 {
		ev.QueryStringParameters = query
	}
	if len(params) > 0 {
		ev.PathParameters = params
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type")) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// isText tells which bodies API Gateway passes as text rather than base64.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || mt == "application/x-www-form-urlencoded" || mt == "application/javascript"
}

func writeResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	if w.Header().Get("Content-Type") == "" && len(body) > 0 {
		w.Header().Set("Content-Type", "application/json")
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// gatewayError answers the way API Gateway itself does, with {"message": ...}.
func gatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": msg})
	_, _ = w.Write(b)
}

func newRequestID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
