package console

import (
	"net"
	"net/http"
	"strconv"
	"time"
)

// The sign-in throttle. Guessing passwords, reset codes or challenge
// sessions is slowed per address and per source (the client's IP, as API
// Gateway saw it): after FailureLimit failures within a FailureWindow, the
// form answers 429 with Retry-After until the window ends, without asking
// Cognito. The counters live in the service's table (Throttle.AddFailure: an
// atomic ADD on an item per key and window, removed by TTL), so that every
// instance of the function counts the same failures. In AWS the routes also
// have a rate limit of their own at API Gateway (template.yaml).
const (
	FailureLimit  = 10
	FailureWindow = 15 * time.Minute
)

// Scopes count apart: failed sign-ins do not keep a person from resetting
// their password.
const (
	scopeSignIn = "signin" // sign-in and set-password
	scopeReset  = "reset"  // both steps of "Forgot your password?"
)

// throttle is a request's counters: the address's and the source's.
type throttle struct {
	keys   []string
	window time.Time // the start of the current window
}

func (c *Console) throttleOf(r *http.Request, scope, email string) throttle {
	src := r.RemoteAddr // the Lambda adapter's: API Gateway's sourceIp
	if host, _, err := net.SplitHostPort(src); err == nil {
		src = host
	}
	keys := []string{scope + ":ip:" + src}
	if email != "" {
		keys = append(keys, scope+":email:"+email)
	}
	return throttle{keys: keys, window: c.Clock.Now().UTC().Truncate(FailureWindow)}
}

// throttled answers 429 with Retry-After when one of t's counters is at the
// limit; it returns false when the request may go on. A counter that
// cannot be read is an outage's 503: the throttle fails closed.
func (c *Console) throttled(w http.ResponseWriter, r *http.Request, t throttle) bool {
	n, err := c.Throttle.Failures(r.Context(), t.keys, t.window)
	if err != nil {
		c.internalError(w, r, "read the sign-in throttle", err)
		return true
	}
	if n < FailureLimit {
		return false
	}
	wait := int(t.window.Add(FailureWindow).Sub(c.Clock.Now()).Seconds()) + 1
	c.logger(r).Warn("throttled", "failures", n, "retry_after", wait)
	w.Header().Set("Retry-After", strconv.Itoa(wait))
	c.fail(w, r, http.StatusTooManyRequests, "Too many failed attempts from this address or network. Wait "+minutes(wait)+", then try again.")
	return true
}

// failed counts a failure against each of t's counters. The answer is
// decided already: a counter that cannot be written is logged.
func (c *Console) failed(r *http.Request, t throttle) {
	expires := t.window.Add(2 * FailureWindow)
	for _, k := range t.keys {
		if err := c.Throttle.AddFailure(r.Context(), k, t.window, expires); err != nil {
			c.logger(r).Warn("count a failed sign-in step", "error", err.Error())
		}
	}
}

// minutes says seconds in whole minutes, rounded up.
func minutes(seconds int) string {
	m := (seconds + 59) / 60
	if m <= 1 {
		return "a minute"
	}
	return strconv.Itoa(m) + " minutes"
}
