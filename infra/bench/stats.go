package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of ds:
// the smallest sample that at least p% of the samples do not exceed. With 20
// samples, p99 is therefore their maximum.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

// ms formats a duration in milliseconds with precision to match its size.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.0f ms", v)
	}
}

// signedMS formats a difference of durations, with its sign.
func signedMS(d time.Duration) string {
	if d < 0 {
		return "-" + ms(-d)
	}
	return "+" + ms(d)
}

// megabytes formats a byte count in decimal megabytes, the unit of the
// issue's 12 MB limit.
func megabytes(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }

// mebibytes formats a byte count in MiB, the unit of memory sizes.
func mebibytes(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
