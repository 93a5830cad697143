package timeline

import (
	"strings"
	"testing"
	"time"
)

// BENCH_TRACE's timeline: spans and marks in order of their start, from the
// origin, in milliseconds; nothing is noted while the timeline is off.
func TestTheTraceTimeline(t *testing.T) {
	var tr Timeline
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tr.Mark("before start", t0)
	tr.Start()
	tr.add("DynamoDB.UpdateItem", t0.Add(5*time.Millisecond), t0.Add(7500*time.Microsecond))
	tr.Mark("creation answered", t0.Add(1500*time.Microsecond))
	var b strings.Builder
	tr.Print(&b, "the last job", t0)
	tr.Mark("after print", t0)
	want := "trace: the last job (start and duration in ms)\n" +
		"       1.5           creation answered\n" +
		"       5.0      2.5  DynamoDB.UpdateItem\n"
	if b.String() != want {
		t.Errorf("timeline:\n%s\nwant:\n%s", b.String(), want)
	}
	if len(tr.spans) != 2 {
		t.Errorf("%d spans noted, want the 2 while on", len(tr.spans))
	}
}
