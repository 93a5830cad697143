package awsclient

import "github.com/aws/smithy-go/middleware"

// TracingTo is the tracing middleware sending to the daemon at addr.
func TracingTo(addr string) func(*middleware.Stack) error {
	t := &tracer{addr: addr}
	return func(s *middleware.Stack) error { return s.Initialize.Add(t, middleware.Before) }
}
