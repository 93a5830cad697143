package sam

import (
	"fmt"
	"slices"
	"time"
)

// Batching is what an SQS mapping and a stream mapping share: how Lambda
// gathers a batch, how the handler may answer it, and whether the mapping
// polls at all.
type Batching struct {
	// BatchSize is the most messages or records per invocation: 1..10000
	// (10 when unset for a queue, 100 for a stream, as in Lambda).
	BatchSize int
	// MaximumBatchingWindow is how long Lambda gathers messages or records
	// before it invokes the function with fewer than BatchSize; 0..300 s.
	MaximumBatchingWindow time.Duration
	FunctionResponseTypes []string
	Enabled               bool // false: the mapping exists but does not poll
}

// ReportsBatchItemFailures tells whether the handler may fail part of a
// batch (FunctionResponseTypes: [ReportBatchItemFailures]): single
// messages of a queue's, a stream's records from a sequence number on.
func (b Batching) ReportsBatchItemFailures() bool {
	return slices.Contains(b.FunctionResponseTypes, ReportBatchItemFailures)
}

// props reads the properties of an event or a resource, keeping the first
// error, which names where it is ("F event E (SQS): ...").
type props struct {
	p     map[string]any
	where string
	err   error
}

func (r *props) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %s", r.where, fmt.Sprintf(format, args...))
	}
}

// integer reads the whole number name, when present, into dst: lo..hi.
func (r *props) integer(name string, lo, hi int, dst *int) {
	v, ok := r.p[name]
	if !ok {
		return
	}
	n, err := integer(v)
	if err != nil || n < lo || n > hi {
		r.fail("%s must be %d..%d, not %v", name, lo, hi, v)
		return
	}
	*dst = n
}

// boolean reads the boolean name, when present, into dst.
func (r *props) boolean(name string, dst *bool) {
	v, ok := r.p[name]
	if !ok {
		return
	}
	b, ok := v.(bool)
	if !ok {
		r.fail("%s must be true or false, not %v", name, v)
		return
	}
	*dst = b
}

// batchSize reads BatchSize and MaximumBatchingWindowInSeconds.
func (r *props) batchSize(b *Batching) {
	r.integer("BatchSize", 1, 10000, &b.BatchSize)
	secs := -1
	r.integer("MaximumBatchingWindowInSeconds", 0, 300, &secs)
	if secs >= 0 {
		b.MaximumBatchingWindow = time.Duration(secs) * time.Second
	}
}

// responseTypes reads FunctionResponseTypes: ReportBatchItemFailures alone.
func (r *props) responseTypes(b *Batching) {
	v, ok := r.p["FunctionResponseTypes"]
	if !ok {
		return
	}
	list, _ := v.([]any)
	if list == nil {
		r.fail("FunctionResponseTypes must be a list, not %v", v)
		return
	}
	for _, t := range list {
		if t != ReportBatchItemFailures {
			r.fail("FunctionResponseTypes may hold only %s, not %v", ReportBatchItemFailures, t)
			return
		}
		b.FunctionResponseTypes = append(b.FunctionResponseTypes, ReportBatchItemFailures)
	}
}
