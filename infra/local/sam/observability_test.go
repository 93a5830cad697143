package sam

import (
	"fmt"
	"strings"
	"testing"
)

// Every function writes JSON lines that Lambda filters at the stack's
// LogLevel (LoggingConfig), so an operator sets the level on deploy rather
// than in code; internal/logging reads it back from AWS_LAMBDA_LOG_LEVEL.
func TestEveryFunctionLogsJSONAtTheLogLevelParameter(t *testing.T) {
	tpl := loadRepoTemplate(t)
	if _, ok := tpl.Parameters["LogLevel"]; !ok {
		t.Fatal("no LogLevel parameter")
	}
	for _, f := range tpl.Functions() {
		lc, ok := tpl.Resources[f.LogicalID].Properties["LoggingConfig"]
		if !ok {
			lc = tpl.Globals.Function["LoggingConfig"]
		}
		m, _ := lc.(map[string]any)
		if m["LogFormat"] != "JSON" || fmt.Sprint(m["ApplicationLogLevel"]) != fmt.Sprint(map[string]any{"Ref": "LogLevel"}) {
			t.Errorf("%s: LoggingConfig %v; want LogFormat JSON and ApplicationLogLevel !Ref LogLevel", f.LogicalID, lc)
		}
	}
}

// What a client meets and what throttles everyone has an alarm too: the
// HTTP API answering 5xx, each HTTP function failing an invocation (a
// timeout or a crash, which the client sees as API Gateway's 500), the
// table throttling reads or writes, and every queue a function reads
// holding a message too long (the deliveries queue aside: its messages wait
// for their retries by design, and a late webhook shows in its DLQ).
func TestWhatClientsMeetHasAnAlarm(t *testing.T) {
	tpl := loadRepoTemplate(t)
	apis, tables := 0, 0
	for _, id := range sortedKeys(tpl.Resources) {
		switch tpl.Resources[id].Type {
		case "AWS::Serverless::HttpApi":
			apis++
			if !tpl.HasAlarm("AWS/ApiGateway", "5xx", "ApiId", id) {
				t.Errorf("HTTP API %s has no alarm on its 5xx answers", id)
			}
		case "AWS::DynamoDB::Table":
			tables++
			for _, m := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
				if !tpl.HasAlarm("AWS/DynamoDB", m, "TableName", id) {
					t.Errorf("table %s has no alarm on %s", id, m)
				}
			}
		}
	}
	if apis == 0 || tables == 0 {
		t.Fatalf("%d HTTP APIs, %d tables found", apis, tables)
	}
	httpFunctions := 0
	for _, f := range tpl.Functions() {
		http := false
		for _, ev := range f.Events {
			http = http || ev.Type == EventHTTPAPI
			if ev.Type != EventSQS {
				continue
			}
			q, _, _ := getAtt(ev.Properties["Queue"])
			if !strings.HasPrefix(q, "Deliveries") && !tpl.HasAlarm("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", q) {
				t.Errorf("queue %s (read by %s) has no alarm on the age of its oldest message", q, f.LogicalID)
			}
		}
		if !http {
			continue
		}
		if httpFunctions++; !tpl.HasAlarm("AWS/Lambda", "Errors", "FunctionName", f.LogicalID) {
			t.Errorf("HTTP function %s has no alarm on its Errors", f.LogicalID)
		}
	}
	if httpFunctions == 0 {
		t.Error("no HTTP function found")
	}
}
