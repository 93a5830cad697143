package retryafter_test

import (
	"net/http"
	"testing"
	"time"

	"genjobs/internal/retryafter"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	const limit = 15 * time.Minute
	for _, tc := range []struct {
		name, v string
		want    time.Duration
	}{
		{"none", "", 0},
		{"seconds", "120", 2 * time.Minute},
		{"seconds with spaces", " 5 ", 5 * time.Second},
		{"zero", "0", 0},
		{"negative seconds", "-5", 0},
		{"seconds over the limit", "3600", limit},
		{"seconds past what a Duration holds", "99999999999999999", limit},
		{"an HTTP date ahead", date(90 * time.Second), 90 * time.Second},
		{"an RFC 850 date ahead", now.Add(time.Minute).Format(time.RFC850), time.Minute},
		{"an HTTP date passed", date(-time.Minute), 0},
		{"an HTTP date now", date(0), 0},
		{"an HTTP date beyond the limit", date(24 * time.Hour), limit},
		{"garbage", "soon", 0},
		{"a fraction", "1.5", 0},
		{"a Go duration", "5s", 0},
	} {
		if got := retryafter.Parse(tc.v, now, limit); got != tc.want {
			t.Errorf("%s: Parse(%q) = %s; want %s", tc.name, tc.v, got, tc.want)
		}
	}
}

// The wait of a date is measured from the caller's clock, not the
// machine's: a clock an hour ahead sees a date an hour and a minute ahead
// as a minute away.
func TestParseReadsDatesAgainstTheGivenNow(t *testing.T) {
	ahead := time.Now().Add(time.Hour)
	v := ahead.Add(time.Minute).UTC().Format(http.TimeFormat)
	got := retryafter.Parse(v, ahead, 24*time.Hour)
	if got > time.Minute || got < 59*time.Second { // HTTP dates have whole seconds
		t.Errorf("Parse(%q) at %s = %s; want about a minute", v, ahead.Format(time.RFC3339), got)
	}
}
