package app_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"

	"genjobs/internal/app/consolefn"
	"genjobs/internal/awsclient"
	"genjobs/internal/clock"
	"genjobs/internal/cognito"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/member"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/testenv"
)

// cognitoStack is the console function built as Lambda builds it, on a
// stack (newStack) whose Cognito is moto's behind a fault proxy: a test
// makes Cognito refuse or fail the calls it chooses.
type cognitoStack struct {
	*stack
	cognito *testenv.Faults
	users   *cognito.Client // moto's pool directly, to set up
	h       http.Handler
}

const ownerEmail, ownerPassword = "owner@example.com", "Owner-Password-1!"

func newCognitoStack(t *testing.T) *cognitoStack { return newCognitoStackAt(t, nil) }

// newCognitoStackAt is newCognitoStack whose console reads the time from
// clk (nil: the system's).
func newCognitoStackAt(t *testing.T, clk clock.Clock) *cognitoStack {
	t.Helper()
	ctx := context.Background()
	s := newStack(t)
	cfg := emulator.MotoConfig(testenv.MotoEndpoint())
	pool, err := cognito.CreatePool(ctx, cfg, testenv.UniqueName(t, "pool"))
	if err != nil {
		t.Fatal(err)
	}
	jwks := testenv.MotoEndpoint() + "/" + pool.PoolID + "/.well-known/jwks.json"
	users, err := cognito.New(cfg, awsclient.Requests.Cognito, cognito.Config{PoolID: pool.PoolID, ClientID: pool.ClientID, JWKSURL: jwks},
		cognito.VerifierOptions{Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	cs := &cognitoStack{stack: s, cognito: testenv.NewFaults(t, testenv.MotoEndpoint()), users: users}
	s.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{
		"DynamoDB": s.table.URL, "SQS": s.queues.URL, "S3": s.queues.URL,
		"KMS": testenv.MotoEndpoint(), "Secrets Manager": testenv.MotoEndpoint(), cip.ServiceID: cs.cognito.URL,
	})
	s.d.Console.UserPoolID, s.d.Console.ClientID, s.d.Console.JWKSURL = pool.PoolID, pool.ClientID, jwks
	s.d.Console.StripeSecretID = "test/stripe"
	if clk != nil {
		s.d.Clock = clk
	}
	cs.h = s.build(consolefn.Build)
	cs.person(ownerEmail, ownerPassword, member.Owner)
	return cs
}

// person makes a user with a permanent password and a membership of ws_a.
func (cs *cognitoStack) person(email, password string, role member.Role) string {
	cs.t.Helper()
	ctx := context.Background()
	u, _, err := cs.users.EnsureUser(ctx, email)
	if err != nil {
		cs.t.Fatal(err)
	}
	if err := cs.users.SetPassword(ctx, email, password); err != nil {
		cs.t.Fatal(err)
	}
	if err := membersdb.New(cs.store).AddMember(ctx, member.Membership{WorkspaceID: "ws_a", UserID: u.UserID, Email: email,
		Role: role, AddedAt: time.Now()}); err != nil {
		cs.t.Fatal(err)
	}
	return u.UserID
}

// page is what a browser got.
type page struct {
	status     int
	location   string
	retryAfter string
	body       string
	cookie     string // the session cookie it set, if any
}

// visit sends a request as a browser on the console's own origin does,
// from source ip, with the session cookie when there is one, through the
// Lambda adapter, under a deadline of timeout.
func (cs *cognitoStack) visit(method, path, ip, cookie string, form url.Values, timeout time.Duration) page {
	cs.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, "https://app.test"+path, body).WithContext(ctx)
	req.RemoteAddr = ip + ":4000"
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://app.test")
	}
	if cookie != "" {
		req.Header.Set("Cookie", "console_session="+cookie)
	}
	rec := lambdatest.Serve(cs.h, req)
	p := page{status: rec.Code, location: rec.Header().Get("Location"), retryAfter: rec.Header().Get("Retry-After"), body: rec.Body.String()}
	for _, c := range rec.Result().Cookies() {
		if c.Name == "console_session" {
			p.cookie = c.Value
		}
	}
	return p
}

// signIn signs the owner in and returns the session cookie and a CSRF token.
func (cs *cognitoStack) signIn() (cookie, csrf string) {
	cs.t.Helper()
	p := cs.visit("POST", "/app/sign-in", "198.51.100.1", "", url.Values{"email": {ownerEmail}, "password": {ownerPassword}}, 10*time.Second)
	if p.status != http.StatusSeeOther || p.cookie == "" {
		cs.t.Fatalf("sign in: %d %s", p.status, p.body)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(cs.visit("GET", "/app/settings/members", "198.51.100.1", p.cookie, nil, 10*time.Second).body)
	if m == nil {
		cs.t.Fatal("no CSRF token on the members page")
	}
	return p.cookie, m[1]
}

// The fixed 500 page's text: only for what no person can cause.
const internalPage = "Something went wrong on our side."

// Every error each Cognito call of the console can return (the SDK's
// error types of the call, as AWS's API reference lists them), answered by
// moto's Cognito behind the fault proxy, is a page a person can act on: a
// message beside the form with a 4xx, 429 with Retry-After for Cognito's
// own limits, 503 with Retry-After when Cognito is throttled or failing.
// Only the deployment's own mistakes (a pool without its email role or a
// trigger's failure, which nobody's request causes) get the fixed 500.
func TestEveryCognitoRefusalIsAPageAPersonCanActOn(t *testing.T) {
	t.Parallel()
	cs := newCognitoStack(t)
	cookie, csrf := cs.signIn()
	memberID := cs.person("member@example.com", "Member-Password-1!", member.Member)

	type want struct {
		status int
		text   string // a fragment of the page (an HTML-escaped one)
	}
	var (
		badCredentials = want{401, "That email and password do not match an account."}
		signInAgain    = want{401, "Sign in again with your temporary password."}
		weak           = want{400, "Choose a stronger password"}
		reset          = want{401, "Your password must be reset"}
		notConfirmed   = want{403, "Your account is not active yet"}
		tooMany        = want{429, "Too many attempts."}
		busy           = want{503, "A service the console depends on did not answer just now"}
		delivery       = want{503, "We could not send the email with your code."}
		firewall       = want{403, "The sign-in service refused this request."}
		badCode        = want{400, "That code is not right for this address."}
		oldCode        = want{400, "That code has expired."}
		badAddress     = want{400, "The sign-in service does not accept this address."}
		sameAnswer     = want{303, ""}
		noAccount      = want{404, "The sign-in service has no account for this person."}
		internal       = want{500, internalPage}
	)
	// What every call can return alike.
	common := map[string]want{
		"TooManyRequestsException": busy, "InternalErrorException": busy,
		"ResourceNotFoundException":                internal, // the pool or its app client is missing
		"InvalidUserPoolConfigurationException":    internal,
		"InvalidLambdaResponseException":           internal,
		"UnexpectedLambdaException":                internal,
		"UserLambdaValidationException":            internal,
		"InvalidEmailRoleAccessPolicyException":    internal,
		"InvalidSmsRoleAccessPolicyException":      internal,
		"InvalidSmsRoleTrustRelationshipException": internal,
	}
	with := func(own map[string]want) map[string]want {
		out := map[string]want{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range own {
			out[k] = v
		}
		return out
	}
	ops := []struct {
		name, op string
		send     func(ip, who string) page
		errors   map[string]want
	}{
		{"sign-in", "InitiateAuth", func(ip, who string) page {
			return cs.visit("POST", "/app/sign-in", ip, "", url.Values{"email": {who}, "password": {"Any-Password-1!"}}, 10*time.Second)
		}, with(map[string]want{
			"NotAuthorizedException": badCredentials, "UserNotFoundException": badCredentials, "InvalidParameterException": badCredentials,
			"PasswordResetRequiredException": reset, "UserNotConfirmedException": notConfirmed,
			"UnsupportedOperationException": internal, "ForbiddenException": firewall,
		})},
		{"set-password", "RespondToAuthChallenge", func(ip, who string) page {
			return cs.visit("POST", "/app/set-password", ip, "", url.Values{"email": {who}, "challenge": {"a-challenge-session"},
				"password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, 10*time.Second)
		}, with(map[string]want{
			"NotAuthorizedException": signInAgain, "UserNotFoundException": signInAgain, "InvalidParameterException": signInAgain,
			"CodeMismatchException": signInAgain, "ExpiredCodeException": signInAgain,
			"ResourceNotFoundException": signInAgain, // moto's answer to a forged session
			"InvalidPasswordException":  weak, "PasswordHistoryPolicyViolationException": weak,
			"PasswordResetRequiredException": reset, "UserNotConfirmedException": notConfirmed,
			"AliasExistsException": internal, "ForbiddenException": firewall, "MFAMethodNotFoundException": internal, "SoftwareTokenMFANotFoundException": internal,
		})},
		{"forgot password", "ForgotPassword", func(ip, who string) page {
			return cs.visit("POST", "/app/forgot-password", ip, "", url.Values{"email": {who}}, 10*time.Second)
		}, with(map[string]want{
			"UserNotFoundException": sameAnswer, "NotAuthorizedException": sameAnswer, "InvalidParameterException": sameAnswer,
			"LimitExceededException": tooMany, "CodeDeliveryFailureException": delivery, "ForbiddenException": firewall,
		})},
		{"new password by code", "ConfirmForgotPassword", func(ip, who string) page {
			return cs.visit("POST", "/app/reset-password", ip, "", url.Values{"email": {who}, "code": {"123456"},
				"password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, 10*time.Second)
		}, with(map[string]want{
			"CodeMismatchException": badCode, "UserNotFoundException": badCode, "NotAuthorizedException": badCode,
			"InvalidParameterException": badCode, "ResourceNotFoundException": badCode, // moto's answer to an unknown address
			"ExpiredCodeException":     oldCode,
			"InvalidPasswordException": weak, "PasswordHistoryPolicyViolationException": weak,
			"LimitExceededException": tooMany, "TooManyFailedAttemptsException": tooMany,
			"UserNotConfirmedException": notConfirmed,
			"ForbiddenException":        firewall,
		})},
		{"member add", "AdminCreateUser", func(ip, who string) page {
			return cs.visit("POST", "/app/settings/members", ip, cookie, url.Values{"csrf": {csrf}, "workspace": {"ws_a"},
				"email": {"new@example.com"}, "role": {"member"}}, 10*time.Second)
		}, with(map[string]want{
			"InvalidParameterException":    badAddress,
			"CodeDeliveryFailureException": delivery,
			// The calls the console makes as the operator would: its
			// grants, its generated password, its own state.
			"NotAuthorizedException": internal, "InvalidPasswordException": internal, "UserNotFoundException": internal,
			"PreconditionNotMetException": internal, "UnsupportedUserStateException": internal,
		})},
		{"member reset", "AdminSetUserPassword", func(ip, who string) page {
			return cs.visit("POST", "/app/settings/members/"+memberID+"/reset-password", ip, cookie,
				url.Values{"csrf": {csrf}, "workspace": {"ws_a"}}, 10*time.Second)
		}, with(map[string]want{
			"UserNotFoundException":     noAccount, // gone between the read and the reset
			"NotAuthorizedException":    internal,
			"InvalidParameterException": internal, "InvalidPasswordException": internal, "PasswordHistoryPolicyViolationException": internal,
		})},
	}
	ip := 0
	for _, o := range ops {
		for code, w := range o.errors {
			t.Run(o.name+"/"+code, func(t *testing.T) {
				ip++ // a source of its own: the throttle counts each apart
				cs.cognito.Refuse(o.op, "", code)
				defer cs.cognito.Clear()
				before := cs.cognito.Failed(o.op)
				p := o.send("203.0.113."+strconv.Itoa(ip), "someone-"+strconv.Itoa(ip)+"@example.com")
				if cs.cognito.Failed(o.op) == before {
					t.Fatalf("no %s call was refused: the page came from elsewhere (%d)", o.op, p.status)
				}
				if p.status != w.status || !strings.Contains(p.body, w.text) {
					t.Errorf("%d, %q; want %d with %q", p.status, excerpt(p.body), w.status, w.text)
				}
				if w.status != 500 && strings.Contains(p.body, internalPage) {
					t.Errorf("the fixed 500 page's text for a refusal a person can act on")
				}
				if (w.status == 429 || w.status == 503) != (p.retryAfter != "") {
					t.Errorf("Retry-After %q with status %d", p.retryAfter, p.status)
				}
			})
		}
	}
}

// excerpt is a page's message: its alert or error paragraph.
func excerpt(body string) string {
	for _, mark := range []string{`role="alert"`, `id="error-message"`, `class="error"`} {
		if i := strings.Index(body, mark); i >= 0 {
			end := min(len(body), i+240)
			return body[i:end]
		}
	}
	return body[:min(len(body), 240)]
}

// Every console page that calls Cognito answers 503 with Retry-After when
// Cognito fails, whatever the way, logs the outage with the request id,
// writes nothing (no session, no member), and answers normally once
// Cognito is back.
func TestEveryConsolePathAnswers503WhenCognitoFails(t *testing.T) {
	t.Parallel()
	cs := newCognitoStack(t)
	cookie, csrf := cs.signIn()
	memberID := cs.person("member@example.com", "Member-Password-1!", member.Member)
	ctx := context.Background()
	cases := []struct {
		name, op string
		fault    testenv.Fault
		send     func() page
		after    int
		written  func() bool // what the request would have written
	}{
		{"sign-in", "InitiateAuth", testenv.Unavailable, func() page {
			return cs.visit("POST", "/app/sign-in", "198.51.100.2", "", url.Values{"email": {ownerEmail}, "password": {ownerPassword}}, lambdaTimeout)
		}, http.StatusSeeOther, nil},
		{"set-password", "RespondToAuthChallenge", testenv.Freeze, func() page {
			return cs.visit("POST", "/app/set-password", "198.51.100.3", "", url.Values{"email": {"x@example.com"}, "challenge": {"a-session"},
				"password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, lambdaTimeout)
		}, http.StatusUnauthorized, nil},
		{"forgot password", "ForgotPassword", testenv.Throttle, func() page {
			return cs.visit("POST", "/app/forgot-password", "198.51.100.4", "", url.Values{"email": {ownerEmail}}, 10*time.Second)
		}, http.StatusSeeOther, nil},
		{"new password by code", "ConfirmForgotPassword", testenv.Drop, func() page {
			return cs.visit("POST", "/app/reset-password", "198.51.100.5", "", url.Values{"email": {"x@example.com"}, "code": {"moto-confirmation-code:1"},
				"password": {"New-Password-12!"}, "password_again": {"New-Password-12!"}}, lambdaTimeout)
		}, http.StatusBadRequest, nil},
		{"member add", "AdminCreateUser", testenv.Unavailable, func() page {
			return cs.visit("POST", "/app/settings/members", "198.51.100.6", cookie, url.Values{"csrf": {csrf}, "workspace": {"ws_a"},
				"email": {"added@example.com"}, "role": {"member"}}, lambdaTimeout)
		}, http.StatusCreated, func() bool {
			ms, _ := membersdb.New(cs.store).Members(ctx, "ws_a")
			for _, m := range ms {
				if m.Email == "added@example.com" {
					return true
				}
			}
			return false
		}},
		{"member reset", "AdminSetUserPassword", testenv.Unavailable, func() page {
			return cs.visit("POST", "/app/settings/members/"+memberID+"/reset-password", "198.51.100.7", cookie,
				url.Values{"csrf": {csrf}, "workspace": {"ws_a"}}, lambdaTimeout)
		}, http.StatusSeeOther, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs.cognito.Set(c.op, c.fault)
			p := c.send()
			failed := cs.cognito.Failed(c.op)
			cs.cognito.Clear()
			if p.status != http.StatusServiceUnavailable || p.retryAfter != "2" || !strings.Contains(p.body, "A service the console depends on did not answer just now") {
				t.Errorf("during the outage: %d, Retry-After %q, %q; want 503, Retry-After 2", p.status, p.retryAfter, excerpt(p.body))
			}
			if failed == 0 {
				t.Errorf("no %s call was failed: the 503 came from elsewhere", c.op)
			}
			if p.cookie != "" {
				t.Error("a session began during the outage")
			}
			if c.written != nil && c.written() {
				t.Error("written during the outage")
			}
			if len(cs.logs.lines("dependency unavailable", `"code":"`)) == 0 {
				t.Errorf("no log line with the outage's code:\n%s", cs.logs.lines())
			}
			if p := c.send(); p.status != c.after {
				t.Errorf("after the outage: %d %q; want %d", p.status, excerpt(p.body), c.after)
			}
		})
	}
}

// A member whose add failed half-way is recovered, not lost: the pool made
// the user but the membership was not written (the add again shows a new
// temporary password, which signs in), or the membership is there but the
// pool has lost the user (an owner's reset makes the user again and moves
// the membership to it).
func TestAMemberWhoseAddFailedHalfWayIsRecovered(t *testing.T) {
	t.Parallel()
	cs := newCognitoStack(t)
	cookie, csrf := cs.signIn()
	ctx := context.Background()
	add := func() page {
		return cs.visit("POST", "/app/settings/members", "198.51.100.8", cookie, url.Values{"csrf": {csrf}, "workspace": {"ws_a"},
			"email": {"half@example.com"}, "role": {"admin"}}, lambdaTimeout)
	}
	cs.table.SetIf("TransactWriteItems", "MEMBER#", testenv.Unavailable)
	if p := add(); p.status != http.StatusServiceUnavailable {
		t.Fatalf("the add whose membership write fails: %d; want 503", p.status)
	}
	cs.table.Clear()
	p := add()
	temp := html.UnescapeString(between(p.body, `id="temp-password">`, "<"))
	if p.status != http.StatusCreated || temp == "" {
		t.Fatalf("the add again: %d, temporary password %q; want 201 and a new temporary password", p.status, temp)
	}
	if r, err := cs.users.SignIn(ctx, "half@example.com", temp); err != nil || !r.NewPasswordRequired {
		t.Errorf("the temporary password shown: %+v %v; want the set-password step", r, err)
	}

	// The membership is there; the pool has no such user.
	if err := membersdb.New(cs.store).AddMember(ctx, member.Membership{WorkspaceID: "ws_a", UserID: "a-user-the-pool-lost",
		Email: "lost@example.com", Role: member.Admin, AddedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if p := cs.visit("GET", "/app/settings/members/a-user-the-pool-lost/reset-password", "198.51.100.8", cookie, nil, lambdaTimeout); p.status != http.StatusOK ||
		!strings.Contains(p.body, `id="confirm-reset"`) {
		t.Fatalf("the reset's confirmation: %d", p.status)
	}
	p = cs.visit("POST", "/app/settings/members/a-user-the-pool-lost/reset-password", "198.51.100.8", cookie,
		url.Values{"csrf": {csrf}, "workspace": {"ws_a"}}, lambdaTimeout)
	u, err := cs.users.User(ctx, "lost@example.com")
	if err != nil {
		t.Fatal(err)
	}
	// Post/Redirect/Get: the page after the redirect shows the temporary
	// password once (the new user's page: the membership moved to it).
	shownAt := "/app/settings/members/" + u.UserID + "/reset-password?done=1"
	if p.status != http.StatusSeeOther || !strings.HasSuffix(p.location, shownAt) || strings.Contains(p.body, "temp-password") {
		t.Fatalf("the reset: %d %s; want 303 to %s, without the password", p.status, p.location, shownAt)
	}
	p = cs.visit("GET", shownAt, "198.51.100.8", cookie, nil, lambdaTimeout)
	temp = html.UnescapeString(between(p.body, `id="temp-password">`, "<"))
	if p.status != http.StatusOK || temp == "" {
		t.Fatalf("the reset's page: %d %q; want a temporary password", p.status, excerpt(p.body))
	}
	if again := cs.visit("GET", shownAt, "198.51.100.8", cookie, nil, lambdaTimeout); strings.Contains(again.body, temp) ||
		!strings.Contains(again.body, `id="reset-shown-once"`) {
		t.Errorf("the reset's page reloaded: %d; want the password gone and a note that it was shown once", again.status)
	}
	ms, _ := membersdb.New(cs.store).Members(ctx, "ws_a")
	var found []member.Membership
	for _, m := range ms {
		if m.Email == "lost@example.com" {
			found = append(found, m)
		}
	}
	if len(found) != 1 || found[0].UserID != u.UserID || found[0].Role != member.Admin {
		t.Errorf("memberships of lost@example.com: %+v; want one, an admin, of the new user %s", found, u.UserID)
	}
	if r, err := cs.users.SignIn(ctx, "lost@example.com", temp); err != nil || !r.NewPasswordRequired {
		t.Errorf("the temporary password shown: %+v %v; want the set-password step", r, err)
	}
}

// between is the text of s after from, up to to.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}
