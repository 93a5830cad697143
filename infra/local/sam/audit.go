package sam

import (
	"sort"
	"strings"
)

// What a deploy would meet that no local run shows: Lambda's recursive-loop
// detection and the template's alarms. The tests of template.yaml read them
// generically, so a function or queue added later is covered without a
// list to keep up to date.

// Loop is a function that can send to a queue that invokes it. Lambda stops
// such a chain after about 16 invocations (the trace header travels with
// each SendMessage) unless the function sets RecursiveLoop: Allow.
type Loop struct {
	Function string // logical id
	Queue    string // logical id of the queue it both reads and sends to
	// RecursiveLoop is the function's setting, "" when unset (Lambda's
	// default then is Terminate).
	RecursiveLoop string
}

// Loops lists every function with an SQS event on a queue its policies let
// it send to (sqs:SendMessage on the queue, on "*", or a SAM
// SQSSendMessagePolicy template naming it, in its Policies or in an
// AWS::IAM::Policy attached to its role), sorted.
func (t *Template) Loops() []Loop {
	var out []Loop
	for _, f := range t.Functions() {
		sends := t.sendsTo(f)
		for _, name := range sortedKeys(f.Events) {
			ev := f.Events[name]
			if ev.Type != EventSQS {
				continue
			}
			q, attr, ok := getAtt(ev.Properties["Queue"])
			if !ok || attr != "Arn" {
				continue
			}
			if sends[q] || sends["*"] {
				out = append(out, Loop{Function: f.LogicalID, Queue: q, RecursiveLoop: f.RecursiveLoop})
			}
		}
	}
	return out
}

// sendsTo is the set of queue logical ids f may send to ("*": any queue).
func (t *Template) sendsTo(f Function) map[string]bool {
	out := map[string]bool{}
	policies, _ := f.Policies.([]any)
	if doc, ok := f.Policies.(map[string]any); ok { // a single inline document
		policies = []any{doc}
	}
	for _, p := range policies {
		switch p := p.(type) {
		case string: // a managed policy by name or ARN
			if strings.Contains(p, "AmazonSQSFullAccess") {
				out["*"] = true
			}
		case map[string]any:
			if tpl, ok := p["SQSSendMessagePolicy"].(map[string]any); ok {
				for _, id := range references(tpl["QueueName"]) {
					out[id] = true
				}
			}
			statementsSending(p, out)
		}
	}
	// Policies attached to the function's generated role (<Function>Role).
	for _, r := range t.Resources {
		if r.Type != "AWS::IAM::Policy" && r.Type != "AWS::IAM::ManagedPolicy" {
			continue
		}
		for _, role := range references(r.Properties["Roles"]) {
			if role == f.LogicalID+"Role" {
				doc, _ := r.Properties["PolicyDocument"].(map[string]any)
				statementsSending(doc, out)
			}
		}
	}
	return out
}

// statementsSending adds to out the queues a policy document's Allow
// statements let its holder send messages to.
func statementsSending(doc map[string]any, out map[string]bool) {
	stmts, _ := doc["Statement"].([]any)
	if s, ok := doc["Statement"].(map[string]any); ok {
		stmts = []any{s}
	}
	for _, raw := range stmts {
		s, _ := raw.(map[string]any)
		if s["Effect"] != "Allow" || !allowsSend(s["Action"]) {
			continue
		}
		resources, _ := s["Resource"].([]any)
		if resources == nil {
			resources = []any{s["Resource"]}
		}
		for _, r := range resources {
			if r == "*" {
				out["*"] = true
			}
			for _, id := range references(r) {
				out[id] = true
			}
		}
	}
}

func allowsSend(action any) bool {
	actions, _ := action.([]any)
	if actions == nil {
		actions = []any{action}
	}
	for _, a := range actions {
		switch s, _ := a.(string); strings.ToLower(s) {
		case "*", "sqs:*", "sqs:sendmessage", "sqs:sendmessagebatch", "sqs:send*":
			return true
		}
	}
	return false
}

// references lists the logical ids a value refers to: Ref X, Fn::GetAtt
// [X, attr], ${X} and ${X.attr} in Fn::Sub, at any depth.
func references(v any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if id, ok := x["Ref"].(string); ok && len(x) == 1 {
				out = append(out, id)
				return
			}
			if res, _, ok := getAtt(x); ok {
				out = append(out, res)
				return
			}
			if sub, ok := x["Fn::Sub"]; ok && len(x) == 1 {
				text, _ := sub.(string)
				if list, ok := sub.([]any); ok && len(list) > 0 {
					text, _ = list[0].(string)
					walk(list[1:])
				}
				for rest := text; ; {
					i := strings.Index(rest, "${")
					if i < 0 {
						break
					}
					j := strings.Index(rest[i:], "}")
					if j < 0 {
						break
					}
					name := rest[i+2 : i+j]
					rest = rest[i+j+1:]
					if !strings.HasPrefix(name, "!") {
						id, _, _ := strings.Cut(name, ".")
						out = append(out, id)
					}
				}
				return
			}
			for _, k := range sortedKeys(x) {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

// DeadLetterQueues lists the queues that catch what something else could
// not handle: every queue some queue's RedrivePolicy names, and every SQS
// on-failure destination of an event source mapping, sorted.
func (t *Template) DeadLetterQueues() []string {
	set := map[string]bool{}
	for _, id := range t.Queues() {
		rp, _ := t.Resources[id].Properties["RedrivePolicy"].(map[string]any)
		if dlq, _, ok := getAtt(rp["deadLetterTargetArn"]); ok {
			set[dlq] = true
		}
	}
	for _, f := range t.Functions() {
		for _, ev := range f.Events {
			dc, _ := ev.Properties["DestinationConfig"].(map[string]any)
			of, _ := dc["OnFailure"].(map[string]any)
			if q, _, ok := getAtt(of["Destination"]); ok && t.Resources[q].Type == "AWS::SQS::Queue" {
				set[q] = true
			}
		}
	}
	return sortedKeys(set)
}

// EventDriven lists the functions some event other than an HTTP route
// invokes (a queue, a stream, a schedule): nobody waits on their answers,
// so only an alarm tells anyone they fail or are throttled.
func (t *Template) EventDriven() []string {
	var out []string
	for _, f := range t.Functions() {
		for _, ev := range f.Events {
			if ev.Type != EventHTTPAPI {
				out = append(out, f.LogicalID)
				break
			}
		}
	}
	return out
}

// Alarm is an AWS::CloudWatch::Alarm on one metric of one resource.
type Alarm struct {
	LogicalID  string
	Namespace  string
	MetricName string
	// Dimensions maps each dimension's name to the logical id its value
	// refers to (Ref or GetAtt), or to its literal value.
	Dimensions map[string]string
}

// Alarms lists the template's single-metric alarms, sorted by logical id.
func (t *Template) Alarms() []Alarm {
	var out []Alarm
	for _, id := range sortedKeys(t.Resources) {
		r := t.Resources[id]
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		a := Alarm{LogicalID: id, Dimensions: map[string]string{}}
		a.Namespace, _ = r.Properties["Namespace"].(string)
		a.MetricName, _ = r.Properties["MetricName"].(string)
		dims, _ := r.Properties["Dimensions"].([]any)
		for _, d := range dims {
			m, _ := d.(map[string]any)
			name, _ := m["Name"].(string)
			if refs := references(m["Value"]); len(refs) > 0 {
				a.Dimensions[name] = refs[0]
			} else {
				a.Dimensions[name], _ = m["Value"].(string)
			}
		}
		out = append(out, a)
	}
	return out
}

// HasAlarm tells whether some alarm watches metric name of namespace ns
// with dimension dim referring to resource id.
func (t *Template) HasAlarm(ns, name, dim, id string) bool {
	for _, a := range t.Alarms() {
		if a.Namespace == ns && a.MetricName == name && a.Dimensions[dim] == id {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
