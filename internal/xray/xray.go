// Package xray records the calls of a sampled invocation as subsegments of
// its X-Ray trace. With a function's Tracing: Active, Lambda records each
// invocation, passes its trace header to the handler (aws-lambda-go puts it
// in the context) and runs the X-Ray daemon beside the function
// (AWS_XRAY_DAEMON_ADDRESS, UDP). The daemon's documented protocol is
// written here rather than linking AWS's X-Ray SDK or OpenTelemetry's,
// which would add megabytes to every binary for the same subsegments.
// Without the variable (outside Lambda, or tracing off) nothing is sent.
//
// Package awsclient records the AWS calls; Transport records the HTTP
// calls to model providers and webhook receivers.
package xray

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Daemon sends subsegments to one X-Ray daemon.
type Daemon struct {
	addr string
	once sync.Once
	conn net.Conn
}

// Lambda is the daemon Lambda runs beside the function; nil without one.
var Lambda = NewDaemon(os.Getenv("AWS_XRAY_DAEMON_ADDRESS"))

// NewDaemon is the daemon at addr (host:port, UDP); nil for "".
func NewDaemon(addr string) *Daemon {
	if addr == "" {
		return nil
	}
	return &Daemon{addr: addr}
}

// Header reads the invocation's X-Ray header in ctx,
// "Root=1-...;Parent=...;Sampled=1".
func Header(ctx context.Context) (root, parent string, sampled bool) {
	h, _ := ctx.Value("x-amzn-trace-id").(string)
	for _, part := range strings.Split(h, ";") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "Root":
			root = v
		case "Parent":
			parent = v
		case "Sampled":
			sampled = v == "1"
		}
	}
	return root, parent, sampled && root != "" && parent != ""
}

// Segment is one subsegment document.
type Segment struct {
	Name      string         `json:"name"`
	ID        string         `json:"id"`
	TraceID   string         `json:"trace_id"`
	ParentID  string         `json:"parent_id"`
	Type      string         `json:"type"`
	Namespace string         `json:"namespace"` // aws, or remote for other HTTP calls
	StartTime float64        `json:"start_time"`
	EndTime   float64        `json:"end_time"`
	Error     bool           `json:"error,omitempty"`    // a 4xx
	Throttle  bool           `json:"throttle,omitempty"` // a 429 (with Error)
	Fault     bool           `json:"fault,omitempty"`    // a 5xx, or no answer
	AWS       map[string]any `json:"aws,omitempty"`
	HTTP      map[string]any `json:"http,omitempty"`
}

// Subsegment starts the subsegment name of the trace root under parent,
// from start to end.
func Subsegment(name, namespace, root, parent string, start, end time.Time) Segment {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return Segment{
		Name: name, ID: hex.EncodeToString(id[:]), TraceID: root, ParentID: parent,
		Type: "subsegment", Namespace: namespace,
		StartTime: float64(start.UnixMicro()) / 1e6, EndTime: float64(end.UnixMicro()) / 1e6,
	}
}

// Status sets the error flags of an answer's status (0: none came).
func (s *Segment) Status(status int, failed bool) {
	switch {
	case status == 429:
		s.Error, s.Throttle = true, true
	case status >= 500 || failed && status == 0:
		s.Fault = true
	case status >= 400 || failed:
		s.Error = true
	}
}

// Send writes one subsegment to the daemon; tracing never fails a call,
// and a nil Daemon sends nothing.
func (d *Daemon) Send(s Segment) {
	if d == nil {
		return
	}
	d.once.Do(func() { d.conn, _ = net.Dial("udp", d.addr) })
	if d.conn == nil {
		return
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return
	}
	_, _ = d.conn.Write(append([]byte("{\"format\": \"json\", \"version\": 1}\n"), doc...))
}
