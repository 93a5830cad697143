package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A load run makes exactly as many calls as asked, whatever the number of
// clients, and counts each failed one apart from the timed ones.
func TestDriveMakesAsManyCallsAsAsked(t *testing.T) {
	var calls atomic.Int64
	s := drive(context.Background(), 3, 10, time.Minute, func(context.Context) error {
		if calls.Add(1)%3 == 0 {
			return errString("refused")
		}
		return nil
	})
	if calls.Load() != 10 || len(s.lat) != 7 || len(s.errs) != 3 {
		t.Errorf("%d calls, %d timed, %d failed; want 10, 7, 3", calls.Load(), len(s.lat), len(s.errs))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls.Store(0)
	if s := drive(ctx, 3, 10, time.Minute, func(context.Context) error { calls.Add(1); return nil }); calls.Load() != 0 || len(s.lat) != 0 {
		t.Errorf("a cancelled run made %d calls", calls.Load())
	}
}

// Each goroutine of driveEach keeps to its own call, so that a call's state
// (a style walk's cursor) is its own.
func TestDriveEachGivesEachClientItsOwnCall(t *testing.T) {
	var counts [2]atomic.Int64
	var calls []func(context.Context) error
	for i := range counts {
		var mine atomic.Int64 // used by one goroutine only: a second would show as a count over 1 at once
		calls = append(calls, func(context.Context) error {
			if mine.Add(1) != 1 {
				return errString("two goroutines in one call")
			}
			defer mine.Add(-1)
			counts[i].Add(1)
			return nil
		})
	}
	s := driveEach(context.Background(), 40, time.Minute, calls)
	if len(s.errs) != 0 || counts[0].Load()+counts[1].Load() != 40 {
		t.Errorf("errors %v, calls %d + %d, want 40", s.errs, counts[0].Load(), counts[1].Load())
	}
}

func TestJobIDReadsTheCreationsAnswer(t *testing.T) {
	if id, err := jobID([]byte(`{"job_id":"0193","status":"queued"}`)); err != nil || id != "0193" {
		t.Errorf("jobID = %q, %v", id, err)
	}
	for _, body := range []string{`{"status":"queued"}`, `<html>`, ``} {
		if _, err := jobID([]byte(body)); err == nil {
			t.Errorf("jobID(%q) found an id", body)
		}
	}
}

// The raw writes copy the service's item under a new job id: every string
// naming the job, and nothing else, changes.
func TestRawPutRenamesTheJobEverywhere(t *testing.T) {
	p := &rawPut{jobID: "J1"}
	item := map[string]types.AttributeValue{
		"PK": str("JOB#J1"), "SK": str("JOB"), "job_id": str("J1"), "GSI1SK": str("2026#J1#x"),
		"price": num("100000"), "endpoint": str("/generate/3d"),
	}
	out := p.renamed(item, "J2")
	for k, want := range map[string]string{"PK": "JOB#J2", "SK": "JOB", "job_id": "J2", "GSI1SK": "2026#J2#x", "endpoint": "/generate/3d"} {
		if got := out[k].(*types.AttributeValueMemberS).Value; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if out["price"].(*types.AttributeValueMemberN).Value != "100000" {
		t.Errorf("a number changed: %v", out["price"])
	}
	if item["PK"].(*types.AttributeValueMemberS).Value != "JOB#J1" {
		t.Error("the service's item was changed")
	}
}
