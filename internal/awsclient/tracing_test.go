package awsclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"genjobs/internal/awsclient"
)

// A sampled invocation's AWS calls reach the X-Ray daemon as subsegments
// of the invocation's segment, in the daemon's UDP format; an unsampled
// one sends nothing. The "AWS service" is a stub answering 400 on
// 127.0.0.1: the subsegment is about the call, not the service.
func TestAWSCallsOfASampledInvocationAreSubsegments(t *testing.T) {
	daemon, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-amzn-RequestId", "req-1")
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"no"}`))
	}))
	defer srv.Close()
	client := sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: aws.AnonymousCredentials{},
		APIOptions:  []func(*middleware.Stack) error{awsclient.TracingTo(daemon.LocalAddr().String())},
	})
	call := func(header string) {
		//lint:ignore SA1029 the key aws-lambda-go sets, a plain string
		ctx := context.WithValue(context.Background(), "x-amzn-trace-id", header)
		_, _ = client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	}
	call("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0")
	call("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")

	_ = daemon.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	n, _, err := daemon.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no subsegment reached the daemon: %v", err)
	}
	header, doc, ok := bytes.Cut(buf[:n], []byte("\n"))
	if !ok || string(header) != `{"format": "json", "version": 1}` {
		t.Fatalf("packet %q: want the daemon's header line first", buf[:n])
	}
	var s struct {
		Name, ID, Type, Namespace string
		TraceID                   string  `json:"trace_id"`
		ParentID                  string  `json:"parent_id"`
		Start                     float64 `json:"start_time"`
		End                       float64 `json:"end_time"`
		Error                     bool
		AWS                       map[string]any
	}
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "SQS" || s.Type != "subsegment" || s.Namespace != "aws" || s.TraceID != "1-5759e988-bd862e3fe1be46a994272793" ||
		s.ParentID != "53995c3f42cd8ad8" || len(s.ID) != 16 || s.End < s.Start || !s.Error ||
		s.AWS["operation"] != "GetQueueUrl" || s.AWS["request_id"] != "req-1" {
		t.Errorf("subsegment %s", doc)
	}
	// Only the sampled call was sent.
	_ = daemon.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _, err := daemon.ReadFrom(buf); err == nil {
		t.Errorf("a second packet: %s", buf[:n])
	}
}
