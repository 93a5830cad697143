package awsclient

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

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Tracing: with the function's Tracing: Active, Lambda records each
// invocation in X-Ray and passes its trace header to the handler
// (aws-lambda-go puts it in the context). Every AWS call of a sampled
// invocation is then sent to the X-Ray daemon Lambda runs beside the
// function (AWS_XRAY_DAEMON_ADDRESS, UDP) as a subsegment of the
// invocation: service, operation, region, request id, status, duration.
// This is the daemon's documented protocol, written here rather than
// linking AWS's X-Ray SDK or OpenTelemetry's, which would add megabytes to
// every binary for the same subsegments. Without the variable (outside
// Lambda, or tracing off) nothing is sent.

// tracer sends subsegments to one daemon address.
type tracer struct {
	once sync.Once
	addr string
	conn net.Conn
}

var daemon = &tracer{addr: os.Getenv("AWS_XRAY_DAEMON_ADDRESS")}

func addTracing(s *middleware.Stack) error {
	if daemon.addr == "" {
		return nil
	}
	return s.Initialize.Add(daemon, middleware.Before)
}

func (*tracer) ID() string { return "genjobs.Trace" }

func (t *tracer) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error) {
	root, parent, sampled := traceHeader(ctx)
	if !sampled {
		return next.HandleInitialize(ctx, in)
	}
	start := time.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	t.send(subsegment(ctx, md, err, root, parent, start, time.Now()))
	return out, md, err
}

// traceHeader reads the invocation's X-Ray header, "Root=1-...;Parent=...;Sampled=1".
func traceHeader(ctx context.Context) (root, parent string, sampled bool) {
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

type segment struct {
	Name      string         `json:"name"`
	ID        string         `json:"id"`
	TraceID   string         `json:"trace_id"`
	ParentID  string         `json:"parent_id"`
	Type      string         `json:"type"`
	Namespace string         `json:"namespace"`
	StartTime float64        `json:"start_time"`
	EndTime   float64        `json:"end_time"`
	Error     bool           `json:"error,omitempty"`
	Throttle  bool           `json:"throttle,omitempty"`
	Fault     bool           `json:"fault,omitempty"`
	AWS       map[string]any `json:"aws"`
	HTTP      map[string]any `json:"http,omitempty"`
}

func subsegment(ctx context.Context, md middleware.Metadata, err error, root, parent string, start, end time.Time) segment {
	var id [8]byte
	_, _ = rand.Read(id[:])
	s := segment{
		Name: middleware.GetServiceID(ctx), ID: hex.EncodeToString(id[:]), TraceID: root, ParentID: parent,
		Type: "subsegment", Namespace: "aws",
		StartTime: float64(start.UnixMicro()) / 1e6, EndTime: float64(end.UnixMicro()) / 1e6,
		AWS: map[string]any{"operation": middleware.GetOperationName(ctx), "region": awsmiddleware.GetRegion(ctx)},
	}
	if rid, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
		s.AWS["request_id"] = rid
	}
	status := 0
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		status = resp.StatusCode
		s.HTTP = map[string]any{"response": map[string]any{"status": status}}
	}
	switch {
	case status == 429 || err != nil && strings.Contains(err.Error(), "Throttl"):
		s.Error, s.Throttle = true, true
	case status >= 500 || err != nil && status == 0:
		s.Fault = true
	case status >= 400 || err != nil:
		s.Error = true
	}
	return s
}

// send writes one subsegment to the daemon; tracing never fails a call.
func (t *tracer) send(s segment) {
	t.once.Do(func() { t.conn, _ = net.Dial("udp", t.addr) })
	if t.conn == nil {
		return
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return
	}
	_, _ = t.conn.Write(append([]byte("{\"format\": \"json\", \"version\": 1}\n"), doc...))
}
