// Package retryafter reads the Retry-After header a server answers with
// when it wants to be asked again later (RFC 9110, section 10.2.3).
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse returns the wait Retry-After value v asks for at now, at most limit
// (which is above 0): a number of seconds, or an HTTP date less now. It is
// 0 for no value, one that is neither, a negative number and a date that
// has passed. now comes from the caller's clock.
func Parse(v string, now time.Time, limit time.Duration) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		if s > int64(limit/time.Second) { // and no overflow of a Duration
			return limit
		}
		return min(time.Duration(s)*time.Second, limit)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), limit)
	}
	return 0
}
