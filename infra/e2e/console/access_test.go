package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/infra/local/devstack"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/sessionsdb"
	"genjobs/internal/store/topupsdb"
)

func TestAMemberSeesNoActionsAndIsRefusedTokenAndAccessForms(t *testing.T) {
	s, b := signedIn(t, member.Member)
	before := tokens(t, s, devstack.DemoWorkspace)

	p := b.get("/app/settings/api-tokens")
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="tokens"`) {
		t.Fatalf("tokens page: %d", p.status)
	}
	for _, action := range []string{`id="create-token"`, ">Revoke<", `id="api-toggle"`} {
		if strings.Contains(p.body, action) {
			t.Errorf("a member's tokens page shows %s", action)
		}
	}
	if p := b.post("/app/settings/api-tokens", b.form(devstack.DemoWorkspace, "name", "sneaky")); p.status != http.StatusForbidden {
		t.Errorf("a member's token creation: %d, want 403", p.status)
	}
	if p := b.post("/app/settings/api-access", b.form(devstack.DemoWorkspace, "enabled", "false")); p.status != http.StatusForbidden {
		t.Errorf("a member's API access switch: %d, want 403", p.status)
	}
	if p := b.post("/app/settings/api-tokens/"+before[0].ID+"/revoke", b.form(devstack.DemoWorkspace)); p.status != http.StatusForbidden {
		t.Errorf("a member's revocation: %d, want 403", p.status)
	}
	if after := tokens(t, s, devstack.DemoWorkspace); len(after) != len(before) || after[0].RevokedAt != nil {
		t.Errorf("tokens changed: %d before, %d after", len(before), len(after))
	}
	if !apiEnabled(t, s, devstack.DemoWorkspace) {
		t.Error("a member switched API access off")
	}
}

func TestAnAdminCannotTopUp(t *testing.T) {
	s, b := signedIn(t, member.Admin)
	p := b.get("/app/settings/billing")
	if strings.Contains(p.body, `id="top-up"`) {
		t.Error("an admin's billing page shows the top-up form")
	}
	if p := b.post("/app/settings/billing/top-up", b.form(devstack.DemoWorkspace, "amount", "25")); p.status != http.StatusForbidden {
		t.Errorf("an admin's top-up: %d, want 403", p.status)
	}
	cos, _ := topupsdb.New(s.Store).Checkouts(context.Background(), devstack.DemoWorkspace)
	if len(cos) != 0 || s.Stripe.Created() != 0 {
		t.Errorf("an admin's refused top-up left %d top-ups and %d checkout sessions", len(cos), s.Stripe.Created())
	}
	// An admin does manage tokens.
	if p := b.post("/app/settings/api-tokens", b.form(devstack.DemoWorkspace, "name", "admin's")); p.status != http.StatusSeeOther {
		t.Errorf("an admin's token creation: %d, want 303", p.status)
	}
}

func TestAnOwnerCannotActOnAnotherWorkspace(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	other := "ws_other"
	otherToken := s.Workspace(t, other, 10*billing.USD, 5, 5)
	theirs := tokens(t, s, other)

	cases := map[string]struct {
		path string
		form url.Values
	}{
		"create a token in B":        {"/app/settings/api-tokens", b.form(other, "name", "x")},
		"switch B's API access":      {"/app/settings/api-access", b.form(other, "enabled", "false")},
		"top up B":                   {"/app/settings/billing/top-up", b.form(other, "amount", "25")},
		"revoke B's token as B":      {"/app/settings/api-tokens/" + theirs[0].ID + "/revoke", b.form(other)},
		"revoke B's token through A": {"/app/settings/api-tokens/" + theirs[0].ID + "/revoke", b.form(devstack.DemoWorkspace)},
		"add a member to B":          {"/app/settings/members", b.form(other, "email", "x@example.com", "role", "owner")},
		"switch the session to B":    {"/app/workspace", b.form(other)},
	}
	for name, c := range cases {
		if p := b.post(c.path, c.form); p.status != http.StatusNotFound && p.status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403 or 404", name, p.status)
		}
	}
	after := tokens(t, s, other)
	if len(after) != 1 || after[0].RevokedAt != nil || !apiEnabled(t, s, other) {
		t.Errorf("workspace B changed: %+v", after)
	}
	if cos, _ := topupsdb.New(s.Store).Checkouts(ctx, other); len(cos) != 0 || s.Stripe.Created() != 0 {
		t.Error("a top-up of B was started")
	}
	if ms, _ := membersdb.New(s.Store).Members(ctx, other); len(ms) != 0 {
		t.Error("a member was added to B")
	}
	if api(t, s, otherToken, "/jobs") != http.StatusOK {
		t.Error("B's token stopped working")
	}
}

func TestFormsNeedTheSessionsCSRFTokenAndTheConsolesOrigin(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	person(t, s, "other@example.com", devstack.DemoWorkspace, member.Owner)
	other := newBrowser(t, s)
	other.signIn("other@example.com", password)
	before := len(tokens(t, s, devstack.DemoWorkspace))

	noToken := url.Values{"workspace": {devstack.DemoWorkspace}, "name": {"no csrf"}}
	if p := b.post("/app/settings/api-tokens", noToken); p.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d, want 403", p.status)
	}
	stolen := url.Values{"csrf": {other.csrf()}, "workspace": {devstack.DemoWorkspace}, "name": {"other session's token"}}
	if p := b.post("/app/settings/api-tokens", stolen); p.status != http.StatusForbidden {
		t.Errorf("with another session's CSRF token: %d, want 403", p.status)
	}
	good := b.form(devstack.DemoWorkspace, "name", "cross-site")
	b.origin = "https://evil.example"
	if p := b.post("/app/settings/api-tokens", good); p.status != http.StatusForbidden {
		t.Errorf("from another origin: %d, want 403", p.status)
	}
	if p := b.post("/app/settings/api-access", b.form(devstack.DemoWorkspace, "enabled", "false")); p.status != http.StatusForbidden {
		t.Errorf("API access from another origin: %d, want 403", p.status)
	}
	// Sec-Fetch-Site, which browsers send, says the same.
	b.origin = ""
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/app/settings/api-tokens", strings.NewReader(good.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := b.do(req); p.status != http.StatusForbidden {
		t.Errorf("Sec-Fetch-Site cross-site: %d, want 403", p.status)
	}
	if after := len(tokens(t, s, devstack.DemoWorkspace)); after != before || !apiEnabled(t, s, devstack.DemoWorkspace) {
		t.Errorf("a refused form changed something: %d tokens before, %d after", before, after)
	}
}

func TestSignInAnswersAWrongPasswordAndAnUnknownEmailAlike(t *testing.T) {
	s, _ := signedIn(t, member.Owner)
	b := newBrowser(t, s)
	wrong := b.post("/app/sign-in", url.Values{"email": {"owner@example.com"}, "password": {"Not-The-Password-1!"}})
	unknown := b.post("/app/sign-in", url.Values{"email": {"nobody@example.com"}, "password": {password}})
	msg := func(p page) string {
		i := strings.Index(p.body, `id="signin-error">`)
		if i < 0 {
			return ""
		}
		rest := p.body[i+len(`id="signin-error">`):]
		return rest[:strings.Index(rest, "<")]
	}
	if wrong.status != http.StatusUnauthorized || unknown.status != wrong.status || msg(wrong) == "" || msg(wrong) != msg(unknown) {
		t.Errorf("wrong password: %d %q; unknown email: %d %q; want the same 401 and message", wrong.status, msg(wrong), unknown.status, msg(unknown))
	}
	if len(b.client.Jar.Cookies(mustURL(s.URL+"/app/"))) != 0 {
		t.Error("a failed sign-in set a cookie")
	}
}

func mustURL(s string) *url.URL { u, _ := url.Parse(s); return u }

func TestEndedAndForgedSessionsGoBackToSignIn(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	toSignIn := func(what string, p page) {
		t.Helper()
		if p.status != http.StatusSeeOther || !strings.Contains(p.location, "/app/sign-in") {
			t.Errorf("%s: %d %q, want a redirect to sign-in", what, p.status, p.location)
		}
	}
	// Forged: a cookie no session hashes to.
	forged := newBrowser(t, s)
	forged.client.Jar.SetCookies(mustURL(s.URL+"/app/"), []*http.Cookie{{Name: "console_session", Value: member.NewSecret(), Path: "/app"}})
	toSignIn("a forged cookie", forged.get("/app/settings/billing"))

	// Expired: a stored session last used 13 hours ago.
	value := member.NewSecret()
	old := time.Now().Add(-13 * time.Hour)
	if err := sessionsdb.New(s.Store).CreateSession(ctx, member.Session{Hash: member.HashSecret(value), UserID: "u", Email: "owner@example.com",
		WorkspaceID: devstack.DemoWorkspace, CSRF: member.NewSecret(), CreatedAt: old, SeenAt: old}); err != nil {
		t.Fatal(err)
	}
	expired := newBrowser(t, s)
	expired.client.Jar.SetCookies(mustURL(s.URL+"/app/"), []*http.Cookie{{Name: "console_session", Value: value, Path: "/app"}})
	toSignIn("a session idle for 13 hours", expired.get("/app/settings/api-tokens"))

	// Signed out: the same cookie no longer works.
	cookies := b.client.Jar.Cookies(mustURL(s.URL + "/app/"))
	if p := b.post("/app/sign-out", b.form("")); p.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", p.status)
	}
	replay := newBrowser(t, s)
	replay.client.Jar.SetCookies(mustURL(s.URL+"/app/"), cookies)
	toSignIn("the cookie after sign-out", replay.get("/app/settings/api-tokens"))
	if p := replay.post("/app/settings/api-tokens", url.Values{"name": {"after sign-out"}, "workspace": {devstack.DemoWorkspace}}); p.status != http.StatusSeeOther {
		t.Errorf("a form after sign-out: %d, want back to sign-in", p.status)
	}
	for _, tk := range tokens(t, s, devstack.DemoWorkspace) {
		if tk.Name == "after sign-out" {
			t.Error("a form after sign-out made a token")
		}
	}
}

func TestATokenIsShownOnceAndRevokedWithinTheCacheAge(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	p := b.post("/app/settings/api-tokens", b.form(devstack.DemoWorkspace, "name", "ci"))
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/app/settings/api-tokens?created=tok_") {
		t.Fatalf("create: %d %q; want 303 to the page that shows it", p.status, p.location)
	}
	if strings.Contains(p.body, auth.TokenPrefix) {
		t.Error("the POST's answer holds a token")
	}
	// What waits for the display is sealed, never the value itself.
	var held []byte
	cookie := b.client.Jar.Cookies(mustURL(s.URL + "/app/"))[0].Value
	out, err := s.Store.Client().GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(s.Store.Table()),
		Key: store.Key("SESSION#"+member.HashSecret(cookie), "ONCE#token:"+strings.TrimPrefix(p.location, "/app/settings/api-tokens?created="))})
	if err != nil || out.Item == nil {
		t.Fatalf("nothing held for the display: %v", err)
	}
	if v, ok := out.Item["sealed"].(*types.AttributeValueMemberB); ok {
		held = v.Value
	}
	// Another session of the same person gets nothing from the address.
	other := newBrowser(t, s)
	other.signIn("owner@example.com", password)
	if q := other.get(p.location); strings.Contains(q.body, `id="new-token-value"`) {
		t.Error("another session is shown the token")
	}
	shown := b.get(p.location)
	token := between(shown.body, `id="new-token-value">`, "<")
	if shown.status != http.StatusOK || !strings.HasPrefix(token, auth.TokenPrefix) || len(token) != len(auth.TokenPrefix)+43 {
		t.Fatalf("the page after the redirect: %d, shows %q as the new token", shown.status, token)
	}
	if len(held) == 0 || strings.Contains(string(held), token) || strings.Contains(string(held), token[len(auth.TokenPrefix):]) {
		t.Errorf("the table held %q for the display; want the value sealed", held)
	}
	// A reload shows it no more, says so, and makes no other token.
	again := b.get(p.location)
	if strings.Contains(again.body, token) || !strings.Contains(again.body, `id="token-shown-once"`) {
		t.Errorf("the reload: shows the token again or does not say it was shown once:\n%s", again.body)
	}
	if again := b.get("/app/settings/api-tokens"); strings.Contains(again.body, token) {
		t.Error("the token is shown again on the next visit")
	}
	made := 0
	for _, tk := range tokens(t, s, devstack.DemoWorkspace) {
		if tk.Name == "ci" {
			made++
		}
	}
	if made != 1 {
		t.Errorf("%d tokens named ci after one creation and two displays; want 1", made)
	}
	if code := api(t, s, token, "/jobs"); code != http.StatusOK {
		t.Fatalf("GET /jobs with the new token: %d", code)
	}
	var id string
	for _, tk := range tokens(t, s, devstack.DemoWorkspace) {
		if tk.Name == "ci" {
			id = tk.ID
			if tk.CreatedBy != "owner@example.com" || tk.Prefix != token[:8] || tk.LastUsedAt == nil {
				t.Errorf("stored token: by %q, prefix %q, last used %v", tk.CreatedBy, tk.Prefix, tk.LastUsedAt)
			}
		}
	}
	if confirm := b.get("/app/settings/api-tokens/" + id + "/revoke"); !strings.Contains(confirm.body, "confirm-revoke") {
		t.Error("revoking asks for no confirmation")
	}
	if p := b.post("/app/settings/api-tokens/"+id+"/revoke", b.form(devstack.DemoWorkspace)); p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", p.status)
	}
	// The API's authentication cache keeps a token at most 5 seconds.
	deadline := time.Now().Add(auth.MaxCacheAge + time.Second)
	for api(t, s, token, "/jobs") != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("the revoked token still works after the cache's 5 seconds")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A token made from a page of workspace A, while another tab switched the
// session to B, is shown once all the same: the page after the redirect is
// A's.
func TestANewTokenIsShownInItsWorkspaceAfterAnotherTabSwitched(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	second := "ws_second"
	s.Workspace(t, second, 10*billing.USD, 5, 5)
	person(t, s, "owner@example.com", second, member.Owner)
	form := b.form(devstack.DemoWorkspace, "name", "from the first tab") // the first tab's page, of A
	if p := b.post("/app/workspace", b.form(second, "back", "/app/settings/api-tokens")); p.status != http.StatusSeeOther {
		t.Fatalf("switch to %s: %d", second, p.status)
	}
	p := b.post("/app/settings/api-tokens", form)
	if p.status != http.StatusSeeOther {
		t.Fatalf("create: %d", p.status)
	}
	shown := b.get(p.location)
	if token := between(shown.body, `id="new-token-value">`, "<"); !strings.HasPrefix(token, auth.TokenPrefix) {
		t.Errorf("the page after creating a token in %s while the session was on %s shows no token", devstack.DemoWorkspace, second)
	}
}

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

func TestNamesAndTitlesShowAsText(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	for _, name := range []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`} {
		p := b.post("/app/settings/api-tokens", b.form(devstack.DemoWorkspace, "name", name))
		if p.status != http.StatusSeeOther {
			t.Fatalf("create %q: %d", name, p.status)
		}
		shown := b.get(p.location)
		for _, page := range []page{shown, b.get(p.location), b.get("/app/settings/api-tokens")} {
			if strings.Contains(page.body, name) {
				t.Errorf("the tokens page holds %q unescaped", name)
			}
		}
	}
	list := b.get("/app/settings/api-tokens").body
	if !strings.Contains(list, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(list, "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the names are not shown as text")
	}
	_ = s
}
