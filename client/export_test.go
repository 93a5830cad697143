package client

import (
	"context"
	"time"
)

// WithSleep replaces the waits between retries and polls, so that tests
// record what was asked for instead of waiting.
func WithSleep(sleep func(context.Context, time.Duration) error) Option {
	return func(c *Client) { c.sleep = sleep }
}
