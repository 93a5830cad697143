package sam

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Event types the local runner plays.
const (
	EventHTTPAPI  = "HttpApi"
	EventSQS      = "SQS"
	EventSchedule = "Schedule"
)

// ReportBatchItemFailures is the FunctionResponseTypes value that lets an
// SQS handler fail single messages of a batch.
const ReportBatchItemFailures = "ReportBatchItemFailures"

// SQSEvent is an SQS event source mapping: a function's event of type SQS.
type SQSEvent struct {
	Function string // the function's logical id
	Name     string // the event's name under Events
	Queue    string // the queue's logical id, from Queue: !GetAtt <Queue>.Arn
	Batching
}

// ScheduleEvent is a function's event of type Schedule: an EventBridge rule
// that invokes the function at a fixed rate.
type ScheduleEvent struct {
	Function   string        // the function's logical id
	Name       string        // the event's name under Events
	Expression string        // as written: "rate(1 minute)"
	Rate       time.Duration // the expression's period
	RuleName   string        // the rule's Name property, else Function+Name (its logical id in the transformed template)
	Enabled    bool          // false with Enabled: false or State: DISABLED
}

// Queue is an AWS::SQS::Queue resource.
type Queue struct {
	LogicalID string
	// VisibilityTimeout in seconds; 30 when unset (as in SQS).
	VisibilityTimeout int
	FIFO              bool
	RedrivePolicy     *RedrivePolicy // nil without a dead-letter queue
}

// RedrivePolicy sends a message to a dead-letter queue once it has been
// received MaxReceiveCount times without being deleted.
type RedrivePolicy struct {
	DeadLetterQueue string // the dead-letter queue's logical id
	MaxReceiveCount int
}

// SQSEvent reads the function's event name, which must be of type SQS.
func (f Function) SQSEvent(name string) (SQSEvent, error) {
	ev, ok := f.Events[name]
	if !ok || ev.Type != EventSQS {
		return SQSEvent{}, fmt.Errorf("%s has no SQS event %s", f.LogicalID, name)
	}
	r := &props{p: ev.Properties, where: fmt.Sprintf("%s event %s (SQS)", f.LogicalID, name)}
	out := SQSEvent{Function: f.LogicalID, Name: name, Batching: Batching{BatchSize: 10, Enabled: true}}
	queue, attr, ok := getAtt(r.p["Queue"])
	if !ok || attr != "Arn" {
		r.fail("Queue must be !GetAtt <Queue>.Arn of a queue of the template, not %v", r.p["Queue"])
	}
	out.Queue = queue
	r.batchSize(&out.Batching)
	if r.err == nil && out.BatchSize > 10 && out.MaximumBatchingWindow < time.Second {
		r.fail("a BatchSize over 10 needs MaximumBatchingWindowInSeconds of at least 1")
	}
	r.responseTypes(&out.Batching)
	r.boolean("Enabled", &out.Enabled)
	if _, ok := r.p["FilterCriteria"]; ok {
		// Lambda deletes the messages a filter drops; playing that wrong
		// would lose or keep messages silently.
		r.fail("FilterCriteria is not played by the local runner")
	}
	if r.err != nil {
		return SQSEvent{}, r.err
	}
	return out, nil
}

// ScheduleEvent reads the function's event name, which must be of type
// Schedule with a rate expression.
func (f Function) ScheduleEvent(name string) (ScheduleEvent, error) {
	ev, ok := f.Events[name]
	if !ok || ev.Type != EventSchedule {
		return ScheduleEvent{}, fmt.Errorf("%s has no Schedule event %s", f.LogicalID, name)
	}
	r := &props{p: ev.Properties, where: fmt.Sprintf("%s event %s (Schedule)", f.LogicalID, name)}
	expr, _ := r.p["Schedule"].(string)
	rate, err := ParseRate(expr)
	if err != nil {
		r.fail("%v", err)
		return ScheduleEvent{}, r.err
	}
	out := ScheduleEvent{Function: f.LogicalID, Name: name, Expression: expr, Rate: rate, RuleName: f.LogicalID + name, Enabled: true}
	if n, ok := r.p["Name"].(string); ok && n != "" {
		out.RuleName = n
	}
	r.boolean("Enabled", &out.Enabled)
	if v, ok := r.p["State"]; ok {
		switch v {
		case "ENABLED":
		case "DISABLED":
			out.Enabled = false
		default:
			r.fail("State must be ENABLED or DISABLED, not %v", v)
		}
	}
	for _, k := range []string{"Input", "InputPath", "InputTransformer"} {
		if _, ok := r.p[k]; ok {
			// The function would get that input instead of the Scheduled Event.
			r.fail("%s is not played by the local runner", k)
		}
	}
	if r.err != nil {
		return ScheduleEvent{}, r.err
	}
	return out, nil
}

var rateExpr = regexp.MustCompile(`^rate\(\s*(\d+)\s+([a-z]+)\s*\)$`)

// ParseRate reads an EventBridge rate expression: rate(1 minute),
// rate(5 minutes), rate(1 hour), rate(2 hours), rate(1 day), rate(7 days).
// As in EventBridge, the unit is singular for 1 and plural otherwise. Cron
// expressions are refused.
func ParseRate(expr string) (time.Duration, error) {
	if strings.HasPrefix(expr, "cron(") {
		return 0, fmt.Errorf("schedule %q: cron expressions are not played by the local runner; use rate(...)", expr)
	}
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("schedule %q is not rate(N minute|minutes|hour|hours|day|days)", expr)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("schedule %q: the rate must be a positive whole number", expr)
	}
	units := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}
	unit := m[2]
	if n != 1 {
		if !strings.HasSuffix(unit, "s") {
			return 0, fmt.Errorf("schedule %q: write %s %ss (EventBridge wants the plural for values other than 1)", expr, m[1], unit)
		}
		unit = strings.TrimSuffix(unit, "s")
	} else if strings.HasSuffix(unit, "s") {
		return 0, fmt.Errorf("schedule %q: write rate(1 %s) (EventBridge wants the singular for 1)", expr, strings.TrimSuffix(unit, "s"))
	}
	d, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("schedule %q: the unit must be minute(s), hour(s) or day(s)", expr)
	}
	return time.Duration(n) * d, nil
}

// Queue reads the AWS::SQS::Queue resource logicalID.
func (t *Template) Queue(logicalID string) (Queue, error) {
	r, ok := t.Resources[logicalID]
	if !ok || r.Type != "AWS::SQS::Queue" {
		return Queue{}, fmt.Errorf("template has no AWS::SQS::Queue %s", logicalID)
	}
	p := &props{p: r.Properties, where: "queue " + logicalID}
	q := Queue{LogicalID: logicalID, VisibilityTimeout: 30}
	p.integer("VisibilityTimeout", 0, 43200, &q.VisibilityTimeout)
	if v, ok := p.p["FifoQueue"]; ok {
		q.FIFO = v == true || v == "true"
	}
	if v, ok := p.p["RedrivePolicy"]; ok && p.err == nil {
		m, _ := v.(map[string]any)
		dlq, attr, ok := getAtt(m["deadLetterTargetArn"])
		if !ok || attr != "Arn" {
			return Queue{}, fmt.Errorf("%s: RedrivePolicy.deadLetterTargetArn must be !GetAtt <Queue>.Arn, not %v", p.where, m["deadLetterTargetArn"])
		}
		if r, ok := t.Resources[dlq]; !ok || r.Type != "AWS::SQS::Queue" {
			return Queue{}, fmt.Errorf("%s: the dead-letter queue %s is not an AWS::SQS::Queue of the template", p.where, dlq)
		}
		n, err := integer(m["maxReceiveCount"])
		if err != nil || n < 1 || n > 1000 {
			return Queue{}, fmt.Errorf("%s: RedrivePolicy.maxReceiveCount must be 1..1000, not %v", p.where, m["maxReceiveCount"])
		}
		q.RedrivePolicy = &RedrivePolicy{DeadLetterQueue: dlq, MaxReceiveCount: n}
	}
	if p.err != nil {
		return Queue{}, p.err
	}
	return q, nil
}

// getAtt reads {"Fn::GetAtt": [Resource, Attr]} (or its "Resource.Attr"
// string form).
func getAtt(v any) (resource, attr string, ok bool) {
	m, _ := v.(map[string]any)
	if len(m) != 1 {
		return "", "", false
	}
	switch ga := m["Fn::GetAtt"].(type) {
	case []any:
		if len(ga) != 2 {
			return "", "", false
		}
		resource, _ = ga[0].(string)
		attr, _ = ga[1].(string)
	case string:
		resource, attr, _ = strings.Cut(ga, ".")
	}
	return resource, attr, resource != "" && attr != ""
}

// integer reads a whole number written as a YAML number or a string, as
// CloudFormation accepts both.
func integer(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case string:
		return strconv.Atoi(n)
	}
	return 0, fmt.Errorf("%v is not a whole number", v)
}
