package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/lambdatest"
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
	rec := lambdatest.Serve(h, httptest.NewRequest("GET", "/x", nil).WithContext(ctx))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("%d %s", rec.Code, rec.Body)
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
	h := httpapi.Middleware(slog.New(slog.DiscardHandler), mux)
	for _, path := range []string{"//jobs", "/./jobs", "/x/../jobs", "/jobs/."} {
		rec := lambdatest.Serve(h, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusNotFound || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != `{"error":"Not found."}` {
			t.Errorf("GET %s: %d %v %s; want 404 {\"error\":\"Not found.\"}", path, rec.Code, rec.Header(), rec.Body)
		}
	}
	if rec := lambdatest.Serve(h, httptest.NewRequest("GET", "/jobs", nil)); rec.Code != http.StatusNoContent {
		t.Errorf("GET /jobs: %d", rec.Code)
	}
}

// Through Lambda a handler reads every header as the client sent it: a
// value with commas whole (a Standard Webhooks or Stripe signature, an
// Idempotency-Key), repeated lines as one comma-joined value (as API
// Gateway joins them), and the cookies of the event's own field.
func TestHeadersReachTheHandlerAsSent(t *testing.T) {
	sent := map[string]string{
		"Webhook-Signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,bm9wZQ==",
		"Stripe-Signature":  "t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd,v0=6ffbb59b2300aae63f2723",
		"Idempotency-Key":   "order 7, attempt 1",
		"X-Webhook-Url":     "https://example.com/hook?a=1,2",
		"Authorization":     "Bearer gjs_abc",
		"Content-Type":      "application/json; charset=utf-8",
	}
	got := http.Header{}
	var cookies []*http.Cookie
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, cookies = r.Header.Clone(), r.Cookies()
		w.WriteHeader(http.StatusNoContent)
	})
	req := httptest.NewRequest("POST", "/callbacks/x", strings.NewReader(`{}`))
	for k, v := range sent {
		req.Header.Set(k, v)
	}
	req.Header.Add("Accept", "application/json")
	req.Header.Add("Accept", "text/plain")
	req.Header.Add("Cookie", "session=s1; csrf=c,2")
	req.Header.Add("Cookie", "theme=dark")
	if rec := lambdatest.Serve(h, req); rec.Code != http.StatusNoContent {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	for k, v := range sent {
		if vs := got.Values(k); len(vs) != 1 || vs[0] != v {
			t.Errorf("%s reached the handler as %q; sent %q", k, vs, v)
		}
	}
	if vs := got.Values("Accept"); len(vs) != 1 || vs[0] != "application/json,text/plain" {
		t.Errorf("two Accept lines reached the handler as %q; want one comma-joined value, as API Gateway sends it", vs)
	}
	want := map[string]string{"session": "s1", "csrf": "c,2", "theme": "dark"}
	for _, c := range cookies {
		if want[c.Name] == c.Value {
			delete(want, c.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("cookies %v reached the handler; missing %v", cookies, want)
	}
}

// The query string reaches the handler as sent, repeated keys and escapes
// included.
func TestTheQueryStringReachesTheHandlerRaw(t *testing.T) {
	var raw string
	var values map[string][]string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, values = r.URL.RawQuery, r.URL.Query()
		w.WriteHeader(http.StatusNoContent)
	})
	const q = "a=1&a=2&b=%2C+x&c=%E2%82%AC"
	lambdatest.Serve(h, httptest.NewRequest("GET", "/usage?"+q, nil))
	if raw != q || len(values["a"]) != 2 || values["b"][0] != ", x" || values["c"][0] != "€" {
		t.Errorf("query %q read as %v; sent %q", raw, values, q)
	}
}

// A binary body crosses the event base64-encoded both ways and arrives
// byte for byte; Set-Cookie lines and repeated response headers reach the
// client.
func TestBinaryBodiesAndCookiesCrossBothWays(t *testing.T) {
	in := []byte{0x89, 'P', 'N', 'G', 0, 0xff, 0xfe, '\r', '\n'}
	out := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x80}
	var received []byte
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received, _ = io.ReadAll(r.Body)
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s1", Path: "/app", HttpOnly: true, Secure: true})
		http.SetCookie(w, &http.Cookie{Name: "csrf", Value: "c1", Path: "/app"})
		w.Header().Add("Vary", "Cookie")
		w.Header().Add("Vary", "Accept")
		w.Header().Set("Content-Type", "image/jpeg")
		_, _ = w.Write(out)
	})
	req := httptest.NewRequest("POST", "/assets", bytes.NewReader(in))
	req.Header.Set("Content-Type", "image/png")
	if ev := lambdatest.Event(req); !ev.IsBase64Encoded {
		t.Fatalf("a PNG body went into the event as text")
	}
	rec := lambdatest.Serve(h, req)
	if !bytes.Equal(received, in) {
		t.Errorf("the handler read %x; sent %x", received, in)
	}
	if !bytes.Equal(rec.Body.Bytes(), out) || rec.Header().Get("Content-Type") != "image/jpeg" {
		t.Errorf("the client got %x (%s); the handler wrote %x", rec.Body.Bytes(), rec.Header().Get("Content-Type"), out)
	}
	if c := rec.Result().Cookies(); len(c) != 2 || c[0].Name != "session" || !c[0].HttpOnly || c[1].Name != "csrf" {
		t.Errorf("cookies %v; want session (HttpOnly) and csrf", c)
	}
	if v := strings.Join(rec.Header().Values("Vary"), ","); v != "Cookie,Accept" {
		t.Errorf("Vary %q; want both values", v)
	}
}

// A handler that writes nothing answers 200, as under net/http.
func TestAHandlerThatWritesNothingAnswers200(t *testing.T) {
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if rec := lambdatest.Serve(h, httptest.NewRequest("GET", "/x", nil)); rec.Code != http.StatusOK {
		t.Errorf("%d %s; want 200", rec.Code, rec.Body)
	}
}
