package sam

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// triggersTemplate is the shape the worker and the sweeper take in
// template.yaml.
const triggersTemplate = `
Globals:
  Function:
    Timeout: 10
    MemorySize: 256
Resources:
  JobsQueue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 720
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt JobsDLQ.Arn
        maxReceiveCount: 3
  JobsDLQ:
    Type: AWS::SQS::Queue
  WorkerFunction:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 120
      MemorySize: 2048
      Events:
        Jobs:
          Type: SQS
          Properties:
            Queue: !GetAtt JobsQueue.Arn
            BatchSize: 1
            FunctionResponseTypes: [ReportBatchItemFailures]
  SweeperFunction:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 60
      Events:
        EveryMinute:
          Type: Schedule
          Properties:
            Schedule: rate(1 minute)
  DefaultsFunction:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Plain:
          Type: SQS
          Properties:
            Queue:
              Fn::GetAtt: [JobsDLQ, Arn]
        Windowed:
          Type: SQS
          Properties:
            Queue: !GetAtt JobsQueue.Arn
            BatchSize: "100"
            MaximumBatchingWindowInSeconds: 5
            Enabled: false
        Off:
          Type: Schedule
          Properties:
            Schedule: rate(2 hours)
            Name: nightly
            State: DISABLED
`

func mustParse(t *testing.T, text string) *Template {
	t.Helper()
	tpl, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func function(t *testing.T, tpl *Template, id string) Function {
	t.Helper()
	for _, f := range tpl.Functions() {
		if f.LogicalID == id {
			return f
		}
	}
	t.Fatalf("no function %s", id)
	return Function{}
}

func TestFunctionTimeoutAndMemoryTakeGlobals(t *testing.T) {
	tpl := mustParse(t, triggersTemplate)
	for _, c := range []struct {
		id              string
		timeout, memory int
	}{
		{"WorkerFunction", 120, 2048},
		{"SweeperFunction", 60, 256},
		{"DefaultsFunction", 10, 256},
	} {
		f := function(t, tpl, c.id)
		if f.Timeout != c.timeout || f.MemorySize != c.memory {
			t.Errorf("%s: timeout %d, memory %d; want %d, %d", c.id, f.Timeout, f.MemorySize, c.timeout, c.memory)
		}
	}
}

// A route waits for its function up to the event's TimeoutInMillis, else
// HTTP API's 30 s.
func TestRouteIntegrationTimeout(t *testing.T) {
	tpl := mustParse(t, `
Resources:
  ApiFunction:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Quick:
          Type: HttpApi
          Properties:
            Method: GET
            Path: /quick
            TimeoutInMillis: 2500
        Plain:
          Type: HttpApi
          Properties:
            Method: GET
            Path: /plain
`)
	got := map[string]time.Duration{}
	for _, r := range tpl.Routes() {
		got[r.Path] = r.Timeout
	}
	if got["/quick"] != 2500*time.Millisecond || got["/plain"] != 30*time.Second {
		t.Errorf("integration timeouts %v; want /quick 2.5s, /plain 30s", got)
	}
}

func TestSQSEvents(t *testing.T) {
	tpl := mustParse(t, triggersTemplate)
	worker, err := function(t, tpl, "WorkerFunction").SQSEvent("Jobs")
	if err != nil {
		t.Fatal(err)
	}
	want := SQSEvent{Function: "WorkerFunction", Name: "Jobs", Queue: "JobsQueue",
		Batching: Batching{BatchSize: 1, FunctionResponseTypes: []string{ReportBatchItemFailures}, Enabled: true}}
	if fmt.Sprint(worker) != fmt.Sprint(want) || !worker.ReportsBatchItemFailures() {
		t.Errorf("worker event %+v; want %+v", worker, want)
	}
	defaults := function(t, tpl, "DefaultsFunction")
	plain, err := defaults.SQSEvent("Plain")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Queue != "JobsDLQ" || plain.BatchSize != 10 || plain.MaximumBatchingWindow != 0 || plain.ReportsBatchItemFailures() || !plain.Enabled {
		t.Errorf("Lambda's defaults: %+v", plain)
	}
	windowed, err := defaults.SQSEvent("Windowed")
	if err != nil {
		t.Fatal(err)
	}
	if windowed.BatchSize != 100 || windowed.MaximumBatchingWindow != 5*time.Second || windowed.Enabled {
		t.Errorf("windowed: %+v", windowed)
	}
	if _, err := defaults.SQSEvent("Off"); err == nil {
		t.Error("a Schedule event read as SQS")
	}
}

func TestSQSEventErrors(t *testing.T) {
	for props, want := range map[string]string{
		`{Queue: "arn:aws:sqs:us-east-1:1:q"}`:                      "Queue must be !GetAtt <Queue>.Arn",
		`{Queue: !GetAtt Q.QueueName}`:                              "Queue must be !GetAtt <Queue>.Arn",
		`{Queue: !GetAtt Q.Arn, BatchSize: 0}`:                      "BatchSize must be 1..10000",
		`{Queue: !GetAtt Q.Arn, BatchSize: 11}`:                     "BatchSize over 10 needs MaximumBatchingWindowInSeconds",
		`{Queue: !GetAtt Q.Arn, MaximumBatchingWindowInSeconds: x}`: "MaximumBatchingWindowInSeconds must be 0..300",
		`{Queue: !GetAtt Q.Arn, FunctionResponseTypes: [Other]}`:    "FunctionResponseTypes may hold only ReportBatchItemFailures",
		`{Queue: !GetAtt Q.Arn, FilterCriteria: {Filters: []}}`:     "FilterCriteria is not played",
	} {
		tpl := mustParse(t, "Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        E:\n          Type: SQS\n          Properties: "+props+"\n")
		_, err := tpl.Functions()[0].SQSEvent("E")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "F event E (SQS): ") {
			t.Errorf("%s: error %v; want one naming F, E and %q", props, err, want)
		}
	}
}

func TestScheduleEvents(t *testing.T) {
	tpl := mustParse(t, triggersTemplate)
	s, err := function(t, tpl, "SweeperFunction").ScheduleEvent("EveryMinute")
	if err != nil {
		t.Fatal(err)
	}
	want := ScheduleEvent{Function: "SweeperFunction", Name: "EveryMinute", Expression: "rate(1 minute)", Rate: time.Minute, RuleName: "SweeperFunctionEveryMinute", Enabled: true}
	if s != want {
		t.Errorf("schedule %+v; want %+v", s, want)
	}
	off, err := function(t, tpl, "DefaultsFunction").ScheduleEvent("Off")
	if err != nil {
		t.Fatal(err)
	}
	if off.Enabled || off.RuleName != "nightly" || off.Rate != 2*time.Hour {
		t.Errorf("disabled schedule %+v", off)
	}
}

func TestParseRate(t *testing.T) {
	for expr, want := range map[string]time.Duration{
		"rate(1 minute)": time.Minute, "rate(5 minutes)": 5 * time.Minute,
		"rate(1 hour)": time.Hour, "rate(12 hours)": 12 * time.Hour,
		"rate(1 day)": 24 * time.Hour, "rate(7 days)": 7 * 24 * time.Hour,
	} {
		if got, err := ParseRate(expr); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", expr, got, err, want)
		}
	}
	for expr, want := range map[string]string{
		"cron(0 12 * * ? *)": "cron expressions are not played by the local runner",
		"rate(5 minute)":     "wants the plural",
		"rate(1 minutes)":    "wants the singular",
		"rate(0 minutes)":    "positive whole number",
		"rate(2 weeks)":      "minute(s), hour(s) or day(s)",
		"rate(1.5 hours)":    "is not rate(",
		"":                   "is not rate(",
	} {
		if _, err := ParseRate(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRate(%q) error %v; want %q", expr, err, want)
		}
	}
}

func TestQueue(t *testing.T) {
	tpl := mustParse(t, triggersTemplate)
	q, err := tpl.Queue("JobsQueue")
	if err != nil {
		t.Fatal(err)
	}
	if q.VisibilityTimeout != 720 || q.RedrivePolicy == nil || *q.RedrivePolicy != (RedrivePolicy{DeadLetterQueue: "JobsDLQ", MaxReceiveCount: 3}) {
		t.Errorf("jobs queue %+v", q)
	}
	dlq, err := tpl.Queue("JobsDLQ")
	if err != nil {
		t.Fatal(err)
	}
	if dlq.VisibilityTimeout != 30 || dlq.RedrivePolicy != nil {
		t.Errorf("SQS's defaults: %+v", dlq)
	}
	if _, err := tpl.Queue("WorkerFunction"); err == nil || !strings.Contains(err.Error(), "no AWS::SQS::Queue WorkerFunction") {
		t.Errorf("a function read as a queue: %v", err)
	}
	bad := mustParse(t, `
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: !GetAtt Missing.Arn, maxReceiveCount: 3}
`)
	if _, err := bad.Queue("Q"); err == nil || !strings.Contains(err.Error(), "dead-letter queue Missing") {
		t.Errorf("missing DLQ: %v", err)
	}
}
