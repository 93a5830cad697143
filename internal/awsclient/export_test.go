package awsclient

import (
	"github.com/aws/smithy-go/middleware"

	"genjobs/internal/xray"
)

// TracingTo is the tracing middleware sending to the daemon at addr.
func TracingTo(addr string) func(*middleware.Stack) error {
	t := &tracer{daemon: xray.NewDaemon(addr)}
	return func(s *middleware.Stack) error { return s.Initialize.Add(t, middleware.Before) }
}
