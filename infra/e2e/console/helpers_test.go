// Package console_test tests the console (internal/console) end to end, on
// the whole local stack: its pages as a browser sees them through API
// Gateway's stand-in and the Lambda adapter, sign-in against Cognito on
// moto, top-ups through the Stripe test double. They live here, beside the
// local stack, because code under internal/ does not import infra/.
package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/auth"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A browser of the console: a cookie jar, redirects not followed (the
// tests read each 303), forms posted from the console's own origin as a
// browser does. Every request goes through the API Gateway stand-in and
// the Lambda event adapter, as in AWS.
type browser struct {
	t      testing.TB
	stack  *devstacktest.Stack
	client *http.Client
	origin string
}

func newBrowser(t testing.TB, s *devstacktest.Stack) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, stack: s, origin: s.URL, client: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	body     string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(body)}
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.stack.URL+path, nil)
	return b.do(req)
}

// post sends a form as the console's pages send it.
func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.stack.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
	}
	return b.do(req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the session's CSRF token from a page's forms.
func (b *browser) csrf() string {
	b.t.Helper()
	p := b.get("/app/settings/api-tokens")
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("no CSRF token on the tokens page (%d)", p.status)
	}
	return m[1]
}

// form is a page's form fields plus the session's CSRF token and workspace.
func (b *browser) form(ws string, kv ...string) url.Values {
	v := url.Values{"csrf": {b.csrf()}, "workspace": {ws}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func (b *browser) signIn(email, password string) {
	b.t.Helper()
	p := b.post("/app/sign-in", url.Values{"email": {email}, "password": {password}})
	if p.status != http.StatusSeeOther || !strings.HasSuffix(p.location, "/app/settings/api-tokens") {
		b.t.Fatalf("sign in as %s: %d %s\n%s", email, p.status, p.location, p.body)
	}
}

const password = "Test-Password-123!"

// person makes a user of the stack's pool with a permanent password and
// gives them role in ws.
func person(t testing.TB, s *devstacktest.Stack, email, ws string, role member.Role) string {
	t.Helper()
	ctx := context.Background()
	c, err := s.Local.Cognito()
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := c.EnsureUser(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword(ctx, email, password); err != nil {
		t.Fatal(err)
	}
	if err := membersdb.New(s.Store).AddMember(ctx, member.Membership{WorkspaceID: ws, UserID: u.UserID, Email: email, Role: role, AddedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return u.UserID
}

// signedIn serves a stack and signs a person with role in the demo
// workspace in.
func signedIn(t testing.TB, role member.Role) (*devstacktest.Stack, *browser) {
	s := devstacktest.Start(t)
	person(t, s, string(role)+"@example.com", devstack.DemoWorkspace, role)
	b := newBrowser(t, s)
	b.signIn(string(role)+"@example.com", password)
	return s, b
}

func tokens(t *testing.T, s *devstacktest.Stack, ws string) []auth.Token {
	t.Helper()
	ts, err := tokensdb.New(s.Store).Tokens(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func apiEnabled(t *testing.T, s *devstacktest.Stack, ws string) bool {
	t.Helper()
	w, err := accountsdb.New(s.Store).Workspace(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return w.APIEnabled
}

// api calls the generation API with a bearer token.
func api(t *testing.T, s *devstacktest.Stack, token, path string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// cdb is the stack's store with the console's records.
