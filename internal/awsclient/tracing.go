package awsclient

import (
	"context"
	"strings"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"genjobs/internal/xray"
)

// Tracing: every AWS call of a sampled invocation is sent to the X-Ray
// daemon (package xray) as a subsegment of the invocation: service,
// operation, region, request id, status, duration.

// tracer sends the subsegments of AWS calls to one daemon.
type tracer struct{ daemon *xray.Daemon }

func addTracing(s *middleware.Stack) error {
	if xray.Lambda == nil {
		return nil
	}
	return s.Initialize.Add(&tracer{daemon: xray.Lambda}, middleware.Before)
}

func (*tracer) ID() string { return "genjobs.Trace" }

func (t *tracer) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error) {
	root, parent, sampled := xray.Header(ctx)
	if !sampled {
		return next.HandleInitialize(ctx, in)
	}
	start := time.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	t.daemon.Send(subsegment(ctx, md, err, root, parent, start, time.Now()))
	return out, md, err
}

func subsegment(ctx context.Context, md middleware.Metadata, err error, root, parent string, start, end time.Time) xray.Segment {
	s := xray.Subsegment(middleware.GetServiceID(ctx), "aws", root, parent, start, end)
	s.AWS = map[string]any{"operation": middleware.GetOperationName(ctx), "region": awsmiddleware.GetRegion(ctx)}
	if rid, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
		s.AWS["request_id"] = rid
	}
	status := 0
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		status = resp.StatusCode
		s.HTTP = map[string]any{"response": map[string]any{"status": status}}
	}
	if err != nil && strings.Contains(err.Error(), "Throttl") { // DynamoDB throttles with a 400
		status = 429
	}
	s.Status(status, err != nil)
	return s
}
