package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"genjobs/internal/logging"
)

func invocation(id string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
}

func decode(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		lines = append(lines, v)
	}
	out.Reset()
	return lines
}

// Where an execution environment runs several invocations at once
// (AWS_LAMBDA_MAX_CONCURRENCY), a line without a context cannot say whose
// it is, so it carries no invocation rather than a wrong one; a line with
// its invocation's context carries that one, cold start included. Lines
// written outside any invocation (init) carry none.
func TestConcurrentInvocationsAreToldApartByContextOnly(t *testing.T) {
	var out bytes.Buffer
	inv := logging.NewInvocations(4)
	log := logging.New(&out, slog.LevelInfo, inv)
	log.Info("init")
	a, endA := inv.Begin(invocation("req-a"))
	b, endB := inv.Begin(invocation("req-b"))
	if !a.ColdStart || b.ColdStart {
		t.Errorf("cold starts: a %t, b %t; want only the first", a.ColdStart, b.ColdStart)
	}
	log.Info("no context")
	log.InfoContext(invocation("req-b"), "b's")
	log.InfoContext(invocation("req-a"), "a's")
	endA()
	endB()
	lines := decode(t, &out)
	if len(lines) != 4 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	for _, l := range lines[:2] {
		if _, ok := l["function_request_id"]; ok {
			t.Errorf("line %v carries an invocation", l)
		}
	}
	if lines[2]["function_request_id"] != "req-b" || lines[2]["cold_start"] != false {
		t.Errorf("b's line %v", lines[2])
	}
	if lines[3]["function_request_id"] != "req-a" || lines[3]["cold_start"] != true {
		t.Errorf("a's line %v", lines[3])
	}
}

// Lambda's levels map onto slog's: TRACE and DEBUG are debug, FATAL above
// error, anything else info; the name written back is Lambda's.
func TestLevelIsLambdas(t *testing.T) {
	for env, want := range map[string]slog.Level{
		"TRACE": slog.LevelDebug, "debug": slog.LevelDebug, "INFO": slog.LevelInfo, "": slog.LevelInfo,
		"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError + 4, "LOUD": slog.LevelInfo,
	} {
		if got := logging.Level(func(string) string { return env }); got != want {
			t.Errorf("AWS_LAMBDA_LOG_LEVEL=%q: %v; want %v", env, got, want)
		}
	}
	if got := logging.LevelName(slog.LevelError + 4); got != "FATAL" {
		t.Errorf("LevelName(FATAL) = %s", got)
	}
}
