package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// millis are durations of whole milliseconds.
func millis(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n) * time.Millisecond
	}
	return out
}

// upTo is 1..n ms, reversed so that the function must sort.
func upTo(n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	for i := n; i >= 1; i-- {
		out = append(out, time.Duration(i)*time.Millisecond)
	}
	return out
}

// The report's P50 and P99 columns are nearest-rank percentiles: the
// footnote says p99 of 20 starts is the slowest one.
func TestPercentileIsTheNearestRank(t *testing.T) {
	for _, c := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"no samples", nil, 50, 0},
		{"one sample is every percentile", millis(7), 99, 7 * time.Millisecond},
		{"p50 of 10 is the 5th", upTo(10), 50, 5 * time.Millisecond},
		{"p50 of 9 is the 5th", upTo(9), 50, 5 * time.Millisecond},
		{"p99 of 20 is the slowest", upTo(20), 99, 20 * time.Millisecond},
		{"p99 of 50 is the slowest", upTo(50), 99, 50 * time.Millisecond},
		{"p99 of 200 is the 198th", upTo(200), 99, 198 * time.Millisecond},
		{"p100 is the slowest", millis(3, 9, 1), 100, 9 * time.Millisecond},
		{"a tiny p is the fastest", upTo(10), 0.1, 1 * time.Millisecond},
	} {
		if got := percentile(c.ds, c.p); got != c.want {
			t.Errorf("%s: percentile(p%g) = %v, want %v", c.name, c.p, got, c.want)
		}
	}
}

func TestPercentileLeavesTheSamplesInTheirOrder(t *testing.T) {
	ds := millis(3, 1, 2)
	percentile(ds, 50)
	if !slices.Equal(ds, millis(3, 1, 2)) {
		t.Errorf("the samples were reordered: %v", ds)
	}
}

func TestFiguresAreFormattedAsTheTableShowsThem(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{ms(0), "0.00 ms"},
		{ms(1234567 * time.Nanosecond), "1.23 ms"},
		{ms(12345678 * time.Nanosecond), "12.3 ms"},
		{ms(123456789 * time.Nanosecond), "123 ms"},
		{ms(2 * time.Second), "2000 ms"},
		{signedMS(1500 * time.Microsecond), "+1.50 ms"},
		{signedMS(-1500 * time.Microsecond), "-1.50 ms"},
		{signedMS(-25 * time.Millisecond), "-25.0 ms"},
		{signedMS(0), "+0.00 ms"},
		{megabytes(12_000_000), "12.00 MB"},
		{megabytes(11_494_999), "11.49 MB"},
		{mebibytes(3 << 20), "3 MiB"},
		{mebibytes(200 << 20), "200 MiB"},
		{commas(0), "0"},
		{commas(999), "999"},
		{commas(1000), "1,000"},
		{commas(123456), "123,456"},
		{commas(12_000_000), "12,000,000"},
		{commas(-999), "-999"},
		{commas(-123456), "-123,456"},
		{commas(-1_000_000), "-1,000,000"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestRatioOfNothingIsZero(t *testing.T) {
	if got := ratio(3*time.Millisecond, 0); got != 0 {
		t.Errorf("ratio(3ms, 0) = %v, want 0", got)
	}
	if got := ratio(3*time.Millisecond, 2*time.Millisecond); got != 1.5 {
		t.Errorf("ratio(3ms, 2ms) = %v, want 1.5", got)
	}
}

// A failed check's note counts each kind of failure by its first line, the
// most frequent first, and names at most three.
func TestFailureSummaryCountsKindsMostFrequentFirst(t *testing.T) {
	var errs []string
	for kind, n := range map[string]int{"refused": 4, "timeout\nat line 3": 3, "500 Internal": 2, "reset": 1} {
		for range n {
			errs = append(errs, kind)
		}
	}
	want := `"refused" ×4; "timeout" ×3; "500 Internal" ×2; and 1 more kinds`
	if got := failureSummary(errs); got != want {
		t.Errorf("failureSummary = %s\nwant %s", got, want)
	}
	// Kinds as frequent as each other come in the order of their text, run after run.
	if got := failureSummary([]string{"reset", "refused", "timeout", "500", "refused", "reset"}); got != `"refused" ×2; "reset" ×2; "500" ×1; and 1 more kinds` {
		t.Errorf("ties: %s", got)
	}
	if got := failureSummary([]string{"a", "a"}); got != `"a" ×2` {
		t.Errorf("one kind: %s", got)
	}
}

func TestFirstLineCutsLongLines(t *testing.T) {
	long := strings.Repeat("x", 200)
	if got := firstLine(long + "\nmore"); got != strings.Repeat("x", 160)+"..." {
		t.Errorf("firstLine kept %d bytes: %q", len(got), got)
	}
	if got := firstLine("short\nsecond"); got != "short" {
		t.Errorf("firstLine = %q", got)
	}
}
