package provider

import (
	"context"
	"errors"
	"strings"
	"time"

	"genjobs/internal/metrics"
)

// Timed is c with each of its requests to the provider (Submit, Read,
// Find, Cancel) written as a ProviderLatency metric of the route's model,
// errors included: a provider slowing down shows before its jobs time out.
// A nil m leaves c as it is.
func Timed(c Client, m *metrics.Emitter) Client {
	if m == nil {
		return c
	}
	return timed{Client: c, m: m}
}

type timed struct {
	Client
	m *metrics.Emitter
}

func (t timed) record(r *Route, start time.Time) {
	model := r.Endpoint[strings.LastIndexByte(r.Endpoint, '/')+1:] // as job.Model
	t.m.Duration(metrics.ProviderLatency, model, time.Since(start))
}

func (t timed) Submit(ctx context.Context, r *Route, s Secret, sub Submission) (Prediction, error) {
	defer t.record(r, time.Now())
	return t.Client.Submit(ctx, r, s, sub)
}

func (t timed) Read(ctx context.Context, r *Route, s Secret, id string) (Prediction, error) {
	start := time.Now()
	p, err := t.Client.Read(ctx, r, s, id)
	if !errors.Is(err, ErrUnreadable) { // that one made no request
		t.record(r, start)
	}
	return p, err
}

func (t timed) Find(ctx context.Context, r *Route, s Secret, jobID string, since time.Time) (Prediction, bool, error) {
	defer t.record(r, time.Now())
	return t.Client.Find(ctx, r, s, jobID, since)
}

func (t timed) Cancel(ctx context.Context, r *Route, s Secret, id string) error {
	defer t.record(r, time.Now())
	return t.Client.Cancel(ctx, r, s, id)
}
