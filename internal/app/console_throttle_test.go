package app_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"genjobs/internal/clock"
	"genjobs/internal/console"
)

// Sign-in, set-password and both steps of "Forgot your password?" are
// throttled per address and per source: after console.FailureLimit
// failures within console.FailureWindow, a 429 page with Retry-After
// until the window ends, whatever the password; other addresses from other
// sources go on; the next window lets the person in.
func TestSignInStepsAreThrottledPerAddressAndPerSource(t *testing.T) {
	t.Parallel()
	clk := &clock.Fixed{T: time.Now().UTC()}
	cs := newCognitoStackAt(t, clk)
	signIn := func(ip, email, password string) page {
		return cs.visit("POST", "/app/sign-in", ip, "", url.Values{"email": {email}, "password": {password}}, 10*time.Second)
	}
	throttled := func(what string, p page) {
		t.Helper()
		wait, err := strconv.Atoi(p.retryAfter)
		if p.status != http.StatusTooManyRequests || err != nil || wait < 1 || wait > int(console.FailureWindow/time.Second)+1 ||
			!strings.Contains(p.body, "Too many failed attempts") {
			t.Errorf("%s: %d, Retry-After %q, %q; want 429 with Retry-After within the window", what, p.status, p.retryAfter, excerpt(p.body))
		}
	}
	for i := range console.FailureLimit {
		if p := signIn("192.0.2.1", ownerEmail, "Wrong-Password-1!"); p.status != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d; want 401", i+1, p.status)
		}
	}
	throttled("the address's right password from another source", signIn("192.0.2.9", ownerEmail, ownerPassword))
	throttled("another address from the same source", signIn("192.0.2.1", "other@example.com", "Wrong-Password-1!"))
	if p := signIn("192.0.2.2", "other@example.com", "Wrong-Password-1!"); p.status != http.StatusUnauthorized {
		t.Errorf("another address from another source: %d; want 401", p.status)
	}
	clk.T = clk.T.Add(console.FailureWindow)
	if p := signIn("192.0.2.9", ownerEmail, ownerPassword); p.status != http.StatusSeeOther || p.cookie == "" {
		t.Errorf("the next window, the right password: %d; want 303 and a session", p.status)
	}

	// Forged set-password challenges count as failures of the address.
	for i := range console.FailureLimit {
		p := cs.visit("POST", "/app/set-password", "192.0.2.3", "", url.Values{"email": {"first@example.com"}, "challenge": {"forged-" + strconv.Itoa(i)},
			"password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, 10*time.Second)
		if p.status != http.StatusUnauthorized {
			t.Fatalf("forged challenge %d: %d; want 401", i+1, p.status)
		}
	}
	throttled("set-password after forged challenges", cs.visit("POST", "/app/set-password", "192.0.2.4", "",
		url.Values{"email": {"first@example.com"}, "challenge": {"forged"}, "password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, 10*time.Second))

	// Every code asked for counts (each is an email); a throttled address
	// can neither ask for more nor try codes.
	for i := range console.FailureLimit {
		if p := cs.visit("POST", "/app/forgot-password", "192.0.2.5", "", url.Values{"email": {ownerEmail}}, 10*time.Second); p.status != http.StatusSeeOther {
			t.Fatalf("code %d: %d; want 303", i+1, p.status)
		}
	}
	throttled("an eleventh code", cs.visit("POST", "/app/forgot-password", "192.0.2.6", "", url.Values{"email": {ownerEmail}}, 10*time.Second))
	throttled("a code tried by a throttled address", cs.visit("POST", "/app/reset-password", "192.0.2.6", "", url.Values{"email": {ownerEmail},
		"code": {"123456"}, "password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, 10*time.Second))
	// Failed sign-ins do not keep a person from resetting their password.
	if p := cs.visit("POST", "/app/forgot-password", "192.0.2.7", "", url.Values{"email": {"other@example.com"}}, 10*time.Second); p.status != http.StatusSeeOther {
		t.Errorf("a code for an address whose sign-ins failed: %d; want 303", p.status)
	}
	// Wrong codes count, from any source.
	for i := range console.FailureLimit {
		p := cs.visit("POST", "/app/reset-password", "192.0.2."+strconv.Itoa(20+i), "", url.Values{"email": {"guessed@example.com"},
			"code": {"moto-confirmation-code:00000" + strconv.Itoa(i)}, "password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, 10*time.Second)
		if p.status != http.StatusBadRequest {
			t.Fatalf("wrong code %d: %d; want 400", i+1, p.status)
		}
	}
	throttled("an eleventh code guessed", cs.visit("POST", "/app/reset-password", "192.0.2.40", "", url.Values{"email": {"guessed@example.com"},
		"code": {"moto-confirmation-code:123456"}, "password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, 10*time.Second))
}
