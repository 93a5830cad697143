package apigw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// JSONErrors wraps the listener the gateway is served on so that the
// answers net/http's server makes by itself to a request it cannot parse
// (a NUL or a newline in a header, a malformed request line, headers too
// large) are JSON like every other answer: {"message":"Bad Request"}, as
// API Gateway answers, instead of text/plain.
func JSONErrors(ln net.Listener) net.Listener { return jsonErrorListener{ln} }

type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c}, nil
}

// serverError is how net/http's server writes its own errors, in one
// write: "HTTP/1.1 " status, these headers, then the status again as text
// (net/http's server.go). A handler's answer always carries a Date header
// first, so it never starts this way.
var serverError = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

type jsonErrorConn struct {
	net.Conn
}

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 4")) || !bytes.Contains(p, serverError) {
		return c.Conn.Write(p)
	}
	line := p[len("HTTP/1.1 "):bytes.Index(p, serverError)]
	code, err := strconv.Atoi(string(line[:min(3, len(line))]))
	if err != nil {
		return c.Conn.Write(p)
	}
	body, _ := json.Marshal(map[string]string{"message": http.StatusText(code)})
	out := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
	if _, err := c.Conn.Write([]byte(out)); err != nil {
		return 0, err
	}
	return len(p), nil
}
