package main

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/internal/job"
)

// The queue rows are measured from the creation's answer to the two marks
// of the job; a job without both is an error, not a zero.
func TestJobMarksMeasureFromTheCreationsAnswer(t *testing.T) {
	var m jobMarks
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	m.delivered.note("j1", t0.Add(3*time.Millisecond))
	m.delivered.note("j1", t0.Add(9*time.Millisecond)) // a redelivery: the first counts
	m.claimed.note("j1", t0.Add(7*time.Millisecond))
	var delivered, claimed []time.Duration
	if err := m.since("j1", t0, &delivered, &claimed); err != nil {
		t.Fatal(err)
	}
	if len(delivered) != 1 || delivered[0] != 3*time.Millisecond || len(claimed) != 1 || claimed[0] != 7*time.Millisecond {
		t.Errorf("delivered %v, claimed %v; want [3ms], [7ms]", delivered, claimed)
	}
	m.delivered.note("j2", t0)
	err := m.since("j2", t0, &delivered, &claimed)
	if err == nil || !strings.Contains(err.Error(), "job j2 completed, but the bench saw no delivery (true) or no claim (false)") {
		t.Errorf("a job without its claim: %v", err)
	}
	if len(delivered) != 1 || len(claimed) != 1 {
		t.Errorf("a job without its claim added samples: %v %v", delivered, claimed)
	}
}

// The worker's handler notes each job whose message it receives, and runs.
func TestOnDeliveryNotesTheJobsOfTheBatch(t *testing.T) {
	var s stamps
	called := 0
	h := s.onDelivery(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		called++
		return events.SQSEventResponse{}, nil
	})
	_, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{Body: `{"job_id":"j1"}`}, {Body: `not json`}, {Body: `{"other":"x"}`}, {Body: `{"job_id":"j2"}`},
	}})
	if err != nil || called != 1 {
		t.Fatalf("handler called %d times, err %v", called, err)
	}
	_, ok1 := s.get("j1")
	_, ok2 := s.get("j2")
	if !ok1 || !ok2 || len(s.at) != 2 {
		t.Errorf("noted %v, want j1 and j2", s.at)
	}
}

func TestRunTimesRecordEachInvocation(t *testing.T) {
	var r runTimes
	h := timedBy(&r, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, errString("failed")
	})
	for range 3 {
		if _, err := h(context.Background(), events.SQSEvent{}); err == nil {
			t.Fatal("the handler's error was lost")
		}
	}
	if r.len() != 3 || len(r.since(1)) != 2 {
		t.Errorf("recorded %d, since(1) %d; want 3 and 2", r.len(), len(r.since(1)))
	}
}

func encoded(t *testing.T, w, h int, as string) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	var err error
	if as == "png" {
		err = png.Encode(&b, m)
	} else {
		err = jpeg.Encode(&b, m, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The result check downloads one result and decodes it: the row says what
// it is, or why it is not what was asked.
func TestCheckResultDecodesTheDownload(t *testing.T) {
	files := map[string][]byte{"/ok.jpg": encoded(t, 8, 4, "jpg"), "/small.jpg": encoded(t, 4, 4, "jpg"), "/x.png": encoded(t, 8, 4, "png")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.Error(w, "NoSuchKey\nThe key does not exist", http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	got, err := checkResult(context.Background(), srv.Client(), srv.URL+"/ok.jpg", 8, 4)
	if err != nil || got != "8x4 JPEG, "+commas(int64(len(files["/ok.jpg"])))+" B" {
		t.Errorf("a good result: %q, %v", got, err)
	}
	for path, want := range map[string]string{
		"/small.jpg":   "result is a 4x4 JPEG, want 8x4",
		"/x.png":       "is not a JPEG",
		"/missing.jpg": "download result: 404 NoSuchKey",
	} {
		if _, err := checkResult(context.Background(), srv.Client(), srv.URL+path, 8, 4); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", path, err, want)
		}
	}
}

func TestJobEndedSaysHowTheJobEnded(t *testing.T) {
	if got := jobEnded("j1", job.Failed, &job.Error{Code: "engine_error", Message: "out of memory"}).Error(); got != "job j1 failed: engine_error: out of memory" {
		t.Errorf("failed job: %q", got)
	}
	if got := jobEnded("j2", job.Cancelled, nil).Error(); got != "job j2 cancelled" {
		t.Errorf("cancelled job: %q", got)
	}
}
