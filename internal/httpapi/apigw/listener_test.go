package apigw

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// raw sends one request as written and reads the answer.
func raw(t *testing.T, addr, request string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Requests net/http cannot parse, and paths no route has, are answered
// as the deployed API answers: JSON, never text/plain or a redirect.
func TestMalformedRequestsAreAnsweredInJSON(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewUnstartedServer(newGateway(t, rec, nil))
	srv.Listener = JSONErrors(srv.Listener)
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	for name, req := range map[string]string{
		"a NUL in a header":        "GET /jobs HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
		"a header without colon":   "GET /jobs HTTP/1.1\r\nHost: x\r\nbroken\r\n\r\n",
		"a malformed request line": "GET\r\nHost: x\r\n\r\n",
	} {
		resp, body := raw(t, addr, req)
		if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" || body != `{"message":"Bad Request"}` {
			t.Errorf("%s: %d %q %s; want 400 application/json {\"message\":\"Bad Request\"}", name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	resp, body := raw(t, addr, "GET /jobs HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 || body != "Jobs" {
		t.Errorf("a good request after them: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"//jobs", "/jobs//special", "//jobs/abc"} {
		resp, body := raw(t, addr, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if body != "Default" || !strings.HasPrefix(rec.last.RouteKey, "$default") {
			t.Errorf("GET %s went to %s (%d %s); want the $default route", path, rec.last.RouteKey, resp.StatusCode, body)
		}
	}
}
