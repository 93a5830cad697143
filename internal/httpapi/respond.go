// Package httpapi holds the HTTP handlers of the API functions: plain
// net/http, wrapped for Lambda by LambdaHandler. Handlers decode, call the
// domain and the adapters, and map errors to status codes; a client mistake
// is always an answer, never a Lambda error. Their tests serve them through
// package lambdatest, as AWS does.
package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"genjobs/internal/fault"
)

// Fixed client-facing texts (docs/api.md, "Errors").
const (
	msgNotFound         = "Not found."
	msgJobNotFound      = "Job not found."
	msgUnauthenticated  = "You are not authenticated."
	msgAPIDisabled      = "API access is not enabled for this workspace."
	msgInternal         = "Internal server error."
	msgUnavailable      = "The service is temporarily unavailable; retry shortly."
	msgTooManyJobs      = "You have reached the maximum number of concurrent jobs."
	invalidBodyPrefix   = "The request body is invalid: "
	invalidQueryPrefix  = "The query is invalid: "
	invalidHeaderPrefix = "The request headers are invalid: "
)

type errorBody struct {
	Error string `json:"error"`
}

// writeJSON answers v as JSON. URLs keep their '&' as is: presigned result
// URLs are read by people in curl output too.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := encode(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"`+msgInternal+`"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// encode is the JSON of every answer: no HTML escaping, no newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// RetryAfter is the Retry-After of a 503, in seconds. The request has
// already retried for up to its whole deadline; throttling eases and a
// restarted dependency answers within seconds, and a client retrying at
// once would only add load, so a short pause that is not zero.
const RetryAfter = 2

// internalError logs err with the request's id and answers a fixed text: no
// AWS or Go error string ever reaches the client. A dependency outage
// (fault.IsUnavailable: throttled, timed out, unreachable, 5xx, or this
// request's deadline) is a 503 with Retry-After, logged with the
// dependency's error code; anything else is our bug, a 500.
func internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if fault.IsUnavailable(err) {
		logger(r.Context()).Warn(what+": dependency unavailable", "code", fault.Code(err), "error", err.Error())
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		writeError(w, http.StatusServiceUnavailable, msgUnavailable)
		return
	}
	logger(r.Context()).Error(what, "error", err.Error())
	writeError(w, http.StatusInternalServerError, msgInternal)
}

type ctxKey struct{}

// logger is the request's logger, carrying its request id.
func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(ctxKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// requestID is API Gateway's id of the request, so that a log line can be
// matched with what the client saw in the apigw-requestid header.
func requestID(r *http.Request) string {
	if rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context()); ok && rc.RequestID != "" {
		return rc.RequestID
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Middleware gives every request a logger with its id, logs one line per
// request, and turns a panic into a logged 500 so a handler never crashes
// the function.
func Middleware(base *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		l := base.With("request_id", requestID(r))
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, l))
		rec := &statusRecorder{ResponseWriter: w}
		if !cleanPath(r.URL.EscapedPath()) {
			// http.ServeMux would answer 307 with an HTML body: no route
			// has such a path.
			writeError(rec, http.StatusNotFound, msgNotFound)
			l.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status)
			return
		}
		defer func() {
			if p := recover(); p != nil {
				l.Error("panic", "panic", slog.AnyValue(p).String(), "method", r.Method, "path", r.URL.Path)
				if rec.status == 0 {
					writeError(rec, http.StatusInternalServerError, msgInternal)
				}
			}
			l.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
				"duration_ms", float64(time.Since(start).Microseconds())/1000)
		}()
		next.ServeHTTP(rec, r)
	})
}

// cleanPath says whether p, an escaped path, is one http.ServeMux serves
// as it is (it judges the escaped path too): no empty, "." or ".." segment
// (a trailing slash aside); an escaped slash is part of its segment.
func cleanPath(p string) bool {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// NotFound answers every request with 404 {"error":"Not found."}: the
// $default route, and unknown paths inside a function.
func NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, msgNotFound)
	})
}
