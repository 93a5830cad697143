package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/pquerna/otp/totp"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/console"
	"genjobs/internal/emulator"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/sessionsdb"
)

// code is the current code of an authenticator holding secret, taken far
// enough from the end of its 30-second step that Cognito (moto checks the
// current step only) reads the same step.
func code(t testing.TB, secret string) string {
	t.Helper()
	if left := 30 - time.Now().Unix()%30; left < 4 {
		time.Sleep(time.Duration(left) * time.Second)
	}
	c, err := totp.GenerateCode(secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// notCode is a well-formed code that is not the current one.
func notCode(t testing.TB, secret string) string {
	n, _ := strconv.Atoi(code(t, secret))
	return fmt.Sprintf("%06d", (n+500000)%1000000)
}

var secretShown = regexp.MustCompile(`id="totp-secret">([A-Za-z2-7=]+)<`)

func shownSecret(t testing.TB, p page) string {
	t.Helper()
	m := secretShown.FindStringSubmatch(p.body)
	if m == nil || !strings.Contains(p.body, `src="data:image/png;base64,`) {
		t.Fatalf("no authenticator key and QR code on the page (%d):\n%s", p.status, p.body)
	}
	return m[1]
}

// pool is the stack's user pool, as an operator reaches it.
func pool(s *devstacktest.Stack) (*cip.Client, *string) {
	api := cip.NewFromConfig(emulator.MotoConfig(s.Local.MotoEndpoint), func(o *cip.Options) { o.BaseEndpoint = aws.String(s.Local.MotoEndpoint) })
	return api, aws.String(s.Local.Pool.PoolID)
}

func totpOn(t testing.TB, s *devstacktest.Stack, email string) bool {
	t.Helper()
	c, err := s.Local.Cognito()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Person(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return p.TOTP
}

func TestAnAuthenticatorIsAddedWithItsCodeAndThenAskedForAtSignIn(t *testing.T) {
	s, b := signedIn(t, member.Member)
	const email, ws = "member@example.com", devstack.DemoWorkspace
	if p := b.get("/app/settings/security"); p.status != http.StatusOK || !strings.Contains(p.body, `id="mfa-start"`) {
		t.Fatalf("security page: %d\n%s", p.status, p.body)
	}
	if p := b.post("/app/settings/security/mfa/start", b.form(ws, "password", "Not-The-Password-1!")); p.status != http.StatusUnauthorized ||
		!strings.Contains(p.body, "not your current password") || strings.Contains(p.body, "totp-secret") {
		t.Fatalf("start with a wrong password: %d\n%s", p.status, p.body)
	}
	p := b.post("/app/settings/security/mfa/start", b.form(ws, "password", password))
	secret := shownSecret(t, p)
	p = b.post("/app/settings/security/mfa/confirm", b.form(ws, "secret", secret, "code", notCode(t, secret)))
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, `id="mfa-error"`) || totpOn(t, s, email) {
		t.Fatalf("a wrong first code: %d, MFA on %v; want 401, the page saying so, MFA off\n%s", p.status, totpOn(t, s, email), p.body)
	}
	p = b.post("/app/settings/security/mfa/confirm", b.form(ws, "secret", secret, "code", code(t, secret)))
	if p.status != http.StatusSeeOther || !totpOn(t, s, email) {
		t.Fatalf("the right first code: %d, MFA on %v", p.status, totpOn(t, s, email))
	}
	if p := b.get("/app/settings/security?done=mfa-on"); !strings.Contains(p.body, `id="mfa-disable"`) {
		t.Fatalf("the page does not show MFA on:\n%s", p.body)
	}

	// Signing in now asks for a code; a wrong one lets nobody in.
	other := newBrowser(t, s)
	p = other.post("/app/sign-in", url.Values{"email": {email}, "password": {password}})
	challenge := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(p.body)
	if p.status != http.StatusOK || challenge == nil || !strings.Contains(p.body, `id="mfa-form"`) {
		t.Fatalf("sign-in with MFA on: %d; want the code step\n%s", p.status, p.body)
	}
	answer := func(c string) page {
		return other.post("/app/sign-in/mfa", url.Values{"email": {email}, "challenge": {challenge[1]}, "code": {c}})
	}
	if p := answer(notCode(t, secret)); p.status != http.StatusUnauthorized || !strings.Contains(p.body, `id="mfa-error"`) {
		t.Fatalf("a wrong code at sign-in: %d\n%s", p.status, p.body)
	}
	if p := other.get("/app/settings/api-tokens"); p.status != http.StatusSeeOther {
		t.Fatalf("after a wrong code the tokens page answers %d; want the sign-in redirect", p.status)
	}
	if p := answer(code(t, secret)); p.status != http.StatusSeeOther || !strings.HasSuffix(p.location, "/app/settings/api-tokens") {
		t.Fatalf("the right code at sign-in: %d %s\n%s", p.status, p.location, p.body)
	}
	if p := other.get("/app/settings/api-tokens"); p.status != http.StatusOK {
		t.Fatalf("signed in with a code, the tokens page answers %d", p.status)
	}

	// Turning MFA off needs a current code.
	if p := b.post("/app/settings/security/mfa/disable", b.form(ws, "password", password, "code", notCode(t, secret))); p.status != http.StatusUnauthorized || !totpOn(t, s, email) {
		t.Fatalf("turning off with a wrong code: %d, MFA on %v; want 401 and still on", p.status, totpOn(t, s, email))
	}
	if p := b.post("/app/settings/security/mfa/disable", b.form(ws, "password", password, "code", code(t, secret))); p.status != http.StatusSeeOther || totpOn(t, s, email) {
		t.Fatalf("turning off with the right code: %d, MFA on %v", p.status, totpOn(t, s, email))
	}
	newBrowser(t, s).signIn(email, password) // password only again
}

func TestAPoolThatRequiresMFAHasNewPeopleSetItUpAtSignIn(t *testing.T) {
	s := devstacktest.Start(t)
	ctx := context.Background()
	api, id := pool(s)
	if _, err := api.SetUserPoolMfaConfig(ctx, &cip.SetUserPoolMfaConfigInput{UserPoolId: id, MfaConfiguration: types.UserPoolMfaTypeOn,
		SoftwareTokenMfaConfiguration: &types.SoftwareTokenMfaConfigType{Enabled: true}}); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Local.Cognito()
	const email = "newcomer@example.com"
	u, _, err := c.EnsureUser(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	if err := membersdb.New(s.Store).AddMember(ctx, member.Membership{WorkspaceID: devstack.DemoWorkspace, UserID: u.UserID, Email: email, Role: member.Member, AddedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, s)
	p := b.post("/app/sign-in", url.Values{"email": {email}, "password": {u.TemporaryPassword}})
	challenge := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(p.body)
	if challenge == nil {
		t.Fatalf("first sign-in: %d\n%s", p.status, p.body)
	}
	p = b.post("/app/set-password", url.Values{"email": {email}, "challenge": {challenge[1]}, "password": {password}, "password_again": {password}})
	secret := shownSecret(t, p)
	challenge = regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(p.body)
	answer := func(c string) page {
		return b.post("/app/sign-in/mfa", url.Values{"email": {email}, "challenge": {challenge[1]}, "setup": {"1"}, "secret": {secret}, "code": {c}})
	}
	if p := answer(notCode(t, secret)); p.status != http.StatusUnauthorized || !strings.Contains(p.body, `id="mfa-error"`) {
		t.Fatalf("a wrong first code: %d\n%s", p.status, p.body)
	}
	if p := answer(code(t, secret)); p.status != http.StatusSeeOther || !strings.HasSuffix(p.location, "/app/settings/api-tokens") {
		t.Fatalf("the right first code: %d %s\n%s", p.status, p.location, p.body)
	}
	if p := b.get("/app/settings/api-tokens"); p.status != http.StatusOK {
		t.Fatalf("after MFA setup the tokens page answers %d", p.status)
	}
}

// sessionHash is the browser's session, as stored.
func (b *browser) sessionHash() string {
	b.t.Helper()
	u, _ := url.Parse(b.stack.URL + "/app/")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "console_session" {
			return member.HashSecret(c.Value)
		}
	}
	b.t.Fatal("the browser has no session cookie")
	return ""
}

// lastChecked puts the session's last check of its person ago in the
// past, as if that long had gone by.
func lastChecked(t testing.TB, s *devstacktest.Stack, hash string, ago time.Duration) {
	t.Helper()
	_, err := s.Store.Client().UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Store.Table()), Key: store.Key("SESSION#"+hash, "SESSION"),
		UpdateExpression:          aws.String("SET checked_at = :at"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":at": store.String(store.Stamp(time.Now().Add(-ago)))},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A person disabled or deleted in the user pool, or signed out everywhere,
// is sent back to sign-in at their session's next check; disabled or
// deleted, their MCP connections (in every workspace) are revoked too.
func TestADisabledDeletedOrSignedOutPersonIsOutAtTheNextCheck(t *testing.T) {
	for name, act := range map[string]func(api *cip.Client, pool, email *string) error{
		"disabled": func(api *cip.Client, pool, email *string) error {
			_, err := api.AdminDisableUser(context.Background(), &cip.AdminDisableUserInput{UserPoolId: pool, Username: email})
			return err
		},
		"deleted": func(api *cip.Client, pool, email *string) error {
			_, err := api.AdminDeleteUser(context.Background(), &cip.AdminDeleteUserInput{UserPoolId: pool, Username: email})
			return err
		},
		"signed out everywhere": func(api *cip.Client, pool, email *string) error {
			_, err := api.AdminUserGlobalSignOut(context.Background(), &cip.AdminUserGlobalSignOutInput{UserPoolId: pool, Username: email})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, b := signedIn(t, member.Owner)
			hash := b.sessionHash()
			ses, err := sessionsdb.New(s.Store).Session(context.Background(), hash, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			client := assistant(t, s, "Helpful Assistant")
			grants := []string{grant(t, s, client, ses.UserID, devstack.DemoWorkspace), grant(t, s, client, ses.UserID, "ws_elsewhere")}
			api, id := pool(s)
			if err := act(api, id, aws.String("owner@example.com")); err != nil {
				t.Fatal(err)
			}
			// Checked at sign-in, a moment ago: the next check is due in 5 minutes.
			if p := b.get("/app/settings/api-tokens"); p.status != http.StatusOK {
				t.Fatalf("right after: %d; want the page until the next check", p.status)
			}
			lastChecked(t, s, hash, member.RecheckEvery+time.Second)
			if p := b.get("/app/settings/api-tokens"); p.status != http.StatusSeeOther || !strings.Contains(p.location, "/app/sign-in") {
				t.Fatalf("5 minutes on: %d %s; want back to sign-in", p.status, p.location)
			}
			if _, err := sessionsdb.New(s.Store).Session(context.Background(), hash, time.Now()); err == nil {
				t.Fatal("the ended session is still stored")
			}
			gone := name != "signed out everywhere"
			for _, g := range grants {
				if live(t, s, g) == gone {
					t.Errorf("connection %s live = %v after the check; want %v", g, gone, !gone)
				}
			}
		})
	}
}

func TestAPersonInGoodStandingIsRecheckedAndStays(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	hash := b.sessionHash()
	lastChecked(t, s, hash, member.RecheckEvery+time.Second)
	if p := b.get("/app/settings/api-tokens"); p.status != http.StatusOK {
		t.Fatalf("after a due check: %d", p.status)
	}
	ses, err := sessionsdb.New(s.Store).Session(context.Background(), hash, time.Now())
	if err != nil || time.Since(ses.CheckedAt) > time.Minute {
		t.Fatalf("the check was not recorded: %+v %v", ses, err)
	}
}

func TestChangingThePasswordEndsTheOtherSessions(t *testing.T) {
	s, here := signedIn(t, member.Admin)
	const email, ws, newPassword = "admin@example.com", devstack.DemoWorkspace, "Brand-New-Pass-77!"
	there := newBrowser(t, s)
	there.signIn(email, password)

	if p := here.post("/app/settings/security/password", here.form(ws, "password", "Not-The-Password-1!", "new_password", newPassword,
		"new_password_again", newPassword)); p.status != http.StatusUnauthorized || !strings.Contains(p.body, `id="password-error"`) {
		t.Fatalf("a wrong current password: %d\n%s", p.status, p.body)
	}
	if p := there.get("/app/settings/api-tokens"); p.status != http.StatusOK {
		t.Fatalf("after a refused change the other session answers %d", p.status)
	}
	p := here.post("/app/settings/security/password", here.form(ws, "password", password, "new_password", newPassword, "new_password_again", newPassword))
	if p.status != http.StatusSeeOther {
		t.Fatalf("change password: %d\n%s", p.status, p.body)
	}
	if p := there.get("/app/settings/api-tokens"); p.status != http.StatusSeeOther || !strings.Contains(p.location, "/app/sign-in") {
		t.Fatalf("the other session after the change: %d %s; want back to sign-in", p.status, p.location)
	}
	if p := here.get("/app/settings/security?done=password"); p.status != http.StatusOK || !strings.Contains(p.body, "password was changed") {
		t.Fatalf("this session after the change: %d", p.status)
	}
	// This session holds a refresh token of the new password: its checks pass.
	lastChecked(t, s, here.sessionHash(), member.RecheckEvery+time.Second)
	if p := here.get("/app/settings/api-tokens"); p.status != http.StatusOK {
		t.Fatalf("this session's next check: %d", p.status)
	}
	if p := newBrowser(t, s).post("/app/sign-in", url.Values{"email": {email}, "password": {password}}); p.status != http.StatusUnauthorized {
		t.Fatalf("the old password still signs in: %d", p.status)
	}
	newBrowser(t, s).signIn(email, newPassword)
}

// A stolen session cookie does not let anyone guess the password on the
// security page: its wrong passwords count toward the sign-in throttle.
func TestTheSecurityPageThrottlesPasswordGuesses(t *testing.T) {
	_, b := signedIn(t, member.Member)
	for i := 0; i < console.FailureLimit; i++ {
		if p := b.post("/app/settings/security/mfa/start", b.form(devstack.DemoWorkspace, "password", "Guess-Number-"+strconv.Itoa(i)+"!")); p.status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d; want 401", i, p.status)
		}
	}
	p := b.post("/app/settings/security/mfa/start", b.form(devstack.DemoWorkspace, "password", password))
	if p.status != http.StatusTooManyRequests || strings.Contains(p.body, "totp-secret") {
		t.Fatalf("after %d wrong passwords, the right one: %d; want 429 and no key shown", console.FailureLimit, p.status)
	}
}
