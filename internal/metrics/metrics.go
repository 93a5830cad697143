// Package metrics writes the service's CloudWatch metrics as Embedded
// Metric Format lines: one JSON object a line on the function's standard
// output, which CloudWatch Logs turns into metrics, with no API call and no
// client. Every metric is in one namespace and dimensioned by the function
// and, where there is one, the model; never by workspace or job (a metric
// per workspace or job would be a new metric each time, and be billed so).
// The only other dimensions are the few this package offers (Code,
// Outcome), each with a handful of values.
package metrics

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"genjobs/internal/clock"
)

// Namespace holds every metric of the service.
const Namespace = "GenJobs"

// The metrics, by name. Counts are in Count, the others in Milliseconds.
const (
	JobsCreated   = "JobsCreated"   // a creation answered 200 (Function, Model)
	JobsCompleted = "JobsCompleted" // (Function, Model)
	JobsFailed    = "JobsFailed"    // (Function, Model, Code: the job's error code)
	JobsCancelled = "JobsCancelled" // (Function, Model)
	// QueueWait is from queued to a worker's claim (Function, Model).
	QueueWait = "QueueWait"
	// RunTime is a worker's attempt from claim to end (Function, Model).
	RunTime = "RunTime"
	// ProviderLatency is one call of a model provider, request to answer
	// (Function, Model).
	ProviderLatency = "ProviderLatency"
	// WebhookAttempts counts attempts (Function, Outcome: delivered,
	// failed, gone); WebhookLatency is one attempt's POST (Function).
	WebhookAttempts = "WebhookAttempts"
	WebhookLatency  = "WebhookLatency"
	// PaymentRequired and TooManyRequests count 402 and 429 answers
	// (Function).
	PaymentRequired = "PaymentRequired"
	TooManyRequests = "TooManyRequests"
	// StripeAnomalies counts Stripe events that disagree with what the
	// deployment recorded (another amount or currency, a top-up it does
	// not have): answered 200, nothing credited (Function). An alarm
	// watches it.
	StripeAnomalies = "StripeAnomalies"
	// ColdStart counts the invocations that were their execution
	// environment's first (Function): each paid for an init.
	ColdStart = "ColdStart"
)

// Dim is one more dimension of a metric: only those this package makes.
type Dim struct{ name, value string }

// Code dimensions a failure by its error code (job.Code*).
func Code(code string) Dim { return Dim{"Code", code} }

// Outcome dimensions a webhook attempt: delivered, failed or gone.
func Outcome(o string) Dim { return Dim{"Outcome", o} }

// Emitter writes metrics of one function. Its methods are safe for
// concurrent use, and do nothing on a nil *Emitter (tests, the local
// stack).
type Emitter struct {
	w        io.Writer
	function string
	clock    clock.Clock
	level    string
	mu       sync.Mutex
}

// New returns an Emitter writing to w (os.Stdout in Lambda) for the
// function named function (its functions/ directory: generate, worker).
func New(w io.Writer, function string, clk clock.Clock) *Emitter {
	return &Emitter{w: w, function: function, clock: clk}
}

// KeptAt gives every line the log level level ("WARN", ...) and returns
// e. Lambda's log-level filtering (ApplicationLogLevel) drops the lines
// below its level, and counts a line without a "level" as INFO: above INFO,
// the metrics' lines would be dropped before CloudWatch Logs reads them.
func (e *Emitter) KeptAt(level string) *Emitter {
	e.level = level
	return e
}

// Count records n of a count metric for model ("" when none applies).
func (e *Emitter) Count(name, model string, n int, dims ...Dim) {
	e.emit(name, "Count", float64(n), model, dims)
}

// Duration records one duration of a timing metric for model.
func (e *Emitter) Duration(name, model string, d time.Duration, dims ...Dim) {
	e.emit(name, "Milliseconds", float64(d)/float64(time.Millisecond), model, dims)
}

type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []definition `json:"Metrics"`
}

type definition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

func (e *Emitter) emit(name, unit string, value float64, model string, dims []Dim) {
	if e == nil {
		return
	}
	root := map[string]any{"Function": e.function, name: value}
	if e.level != "" {
		root["level"] = e.level
	}
	set := []string{"Function"}
	if model != "" {
		root["Model"] = model
		set = append(set, "Model")
	}
	for _, d := range dims {
		if d.name == "" || d.value == "" {
			continue
		}
		root[d.name] = d.value
		set = append(set, d.name)
	}
	root["_aws"] = map[string]any{
		"Timestamp": e.clock.Now().UnixMilli(),
		"CloudWatchMetrics": []directive{{
			Namespace: Namespace, Dimensions: [][]string{set},
			Metrics: []definition{{Name: name, Unit: unit}},
		}},
	}
	line, err := json.Marshal(root)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(line, '\n'))
}
