package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/member"
	"genjobs/internal/store/membersdb"
)

// An address Cognito refuses as a user name (moto refuses a&b@a.example, as
// the pool does) is a message beside the members form, not a 500; nobody
// is added.
func TestAnAddressCognitoRefusesIsAMessageBesideTheForm(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	p := b.post("/app/settings/members", b.form(devstack.DemoWorkspace, "email", "a&b@a.example", "role", "member"))
	if p.status != http.StatusBadRequest || !strings.Contains(between(p.body, `id="email-error">`, "<"), "does not accept this address") {
		t.Fatalf("%d, %q; want 400 and the message beside the email field", p.status, between(p.body, `id="email-error">`, "<"))
	}
	ms, _ := membersdb.New(s.Store).Members(context.Background(), devstack.DemoWorkspace)
	for _, m := range ms {
		if strings.Contains(m.Email, "a&b") {
			t.Errorf("a member was added: %+v", m)
		}
	}
}

// An anonymous set-password with a challenge session nobody was given is
// the sign-in page asking to sign in again, not a 500; no session begins.
func TestAForgedChallengeIsTheSignInPageAgain(t *testing.T) {
	s := devstacktest.Start(t)
	person(t, s, "first@example.com", devstack.DemoWorkspace, member.Member)
	anyone := newBrowser(t, s)
	for _, challenge := range []string{"forged", strings.Repeat("A", 400)} {
		p := anyone.post("/app/set-password", url.Values{"email": {"first@example.com"}, "challenge": {challenge},
			"password": {"Brand-New-Pass-9!"}, "password_again": {"Brand-New-Pass-9!"}})
		msg := between(p.body, `id="signin-error">`, "<")
		if p.status != http.StatusUnauthorized || !strings.Contains(msg, "Sign in again") || !strings.Contains(p.body, `action="/app/sign-in"`) {
			t.Errorf("challenge %.10q: %d %q; want 401 and the sign-in form asking to sign in again", challenge, p.status, msg)
		}
	}
	if p := anyone.get("/app/settings/api-tokens"); p.status != http.StatusSeeOther {
		t.Errorf("a forged challenge gave a session: %d", p.status)
	}
}

// "Forgot your password?": a code by email (moto's, read from the local
// stack's mailbox), then a new password. An unknown address gets the same
// answer as a known one.
func TestAForgottenPasswordIsResetByCode(t *testing.T) {
	s := devstacktest.Start(t)
	person(t, s, "forgetful@example.com", devstack.DemoWorkspace, member.Member)
	b := newBrowser(t, s)
	if p := b.get("/app/sign-in"); !strings.Contains(p.body, `href="/app/forgot-password"`) {
		t.Fatal("the sign-in page has no link to reset a password")
	}
	known := b.post("/app/forgot-password", url.Values{"email": {"Forgetful@example.com"}})
	unknown := b.post("/app/forgot-password", url.Values{"email": {"nobody@example.com"}})
	if known.status != http.StatusSeeOther || unknown.status != http.StatusSeeOther ||
		strings.Replace(unknown.location, "nobody", "forgetful", 1) != known.location {
		t.Fatalf("known: %d %s; unknown: %d %s; want the same answer", known.status, known.location, unknown.status, unknown.location)
	}
	kp, up := b.get(known.location), b.get(unknown.location)
	if kp.status != http.StatusOK || strings.Replace(up.body, "nobody", "forgetful", -1) != kp.body {
		t.Fatalf("the code pages differ for a known (%d) and an unknown address (%d)", kp.status, up.status)
	}
	code := s.Local.Mail.Code("forgetful@example.com")
	if !strings.HasPrefix(code, "moto-confirmation-code:") || s.Local.Mail.Code("nobody@example.com") != "" {
		t.Fatalf("the mailbox has %q for the known address", code)
	}
	form := func(code string) url.Values {
		return url.Values{"email": {"forgetful@example.com"}, "code": {code}, "password": {"Remembered-Now-7!"}, "password_again": {"Remembered-Now-7!"}}
	}
	if p := b.post("/app/reset-password", form("moto-confirmation-code:000000")); p.status != http.StatusBadRequest ||
		!strings.Contains(html.UnescapeString(between(p.body, `id="reset-error">`, "<")), "code") {
		t.Errorf("a wrong code: %d %q; want 400 and a message about the code", p.status, between(p.body, `id="reset-error">`, "<"))
	}
	if p := b.post("/app/reset-password", url.Values{"email": {"nobody@example.com"}, "code": {"moto-confirmation-code:123456"},
		"password": {"Remembered-Now-7!"}, "password_again": {"Remembered-Now-7!"}}); p.status != http.StatusBadRequest {
		t.Errorf("a code for an unknown address: %d; want 400, as a wrong code", p.status)
	}
	p := b.post("/app/reset-password", form(code))
	if p.status != http.StatusSeeOther || !strings.HasSuffix(p.location, "/app/sign-in?done=password-reset") {
		t.Fatalf("the right code: %d %s\n%s", p.status, p.location, between(p.body, `id="reset-error">`, "<"))
	}
	if notice := b.get(p.location); !strings.Contains(notice.body, "Your password is changed") {
		t.Error("the sign-in page does not say the password is changed")
	}
	if p := b.post("/app/sign-in", url.Values{"email": {"forgetful@example.com"}, "password": {password}}); p.status != http.StatusUnauthorized {
		t.Errorf("the old password: %d; want 401", p.status)
	}
	b.signIn("forgetful@example.com", "Remembered-Now-7!")
}
