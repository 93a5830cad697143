package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/auth"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/oauthdb"
)

const assistantRedirect = "https://assistant.example/callback"

// verifier and its S256 challenge, as an assistant makes them.
const verifier = "a-pkce-verifier-of-forty-three-characters-or-more-0123"

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// assistant registers a public client as an assistant does (RFC 7591,
// through the stack's /oauth/register) and returns its id.
func assistant(t *testing.T, s *devstacktest.Stack, name string) string {
	t.Helper()
	body := `{"client_name":` + jsonString(name) + `,"redirect_uris":["` + assistantRedirect + `"],"token_endpoint_auth_method":"none"}`
	resp, err := http.Post(s.URL+"/oauth/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ClientID string `json:"client_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated || out.ClientID == "" {
		t.Fatalf("register: %d %v %+v", resp.StatusCode, err, out)
	}
	return out.ClientID
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// authorizeQuery is an assistant's authorization request; kv replace or
// (with an empty value) leave out its parameters.
func authorizeQuery(s *devstacktest.Stack, client string, kv ...string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {assistantRedirect},
		"code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}, "state": {"st-123"},
		"resource": {s.URL + "/mcp"}, "scope": {"jobs"}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
		} else {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q.Encode()
}

// codesIssued counts the authorization codes in the table.
func codesIssued(t *testing.T, s *devstacktest.Stack) int {
	t.Helper()
	out, err := s.Store.Client().Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.Store.Table()),
		FilterExpression:          aws.String("begins_with(PK, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "OAUTHCODE#"}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

// consent is the consent form's fields for the request query.
func consent(b *browser, query, ws, decision string) url.Values {
	return url.Values{"csrf": {b.csrf()}, "workspace": {ws}, "request": {query}, "decision": {decision}}
}

// TestConsentSignsInThenIssuesACodeForTheChosenWorkspace: an assistant's
// authorization request sends a person who is not signed in to the
// sign-in page and, once signed in, back to the same request; the consent
// page names the client as unverified, where the browser goes and the
// workspace to bill; Allow sends the browser to the client with a code
// for the workspace the person picked (redeemable at /oauth/token), Deny
// with access_denied. A consent without the session's CSRF token, from
// another origin, or for a workspace not the person's issues nothing.
func TestConsentSignsInThenIssuesACodeForTheChosenWorkspace(t *testing.T) {
	s := devstacktest.Start(t)
	ctx := context.Background()
	user := person(t, s, "ana@example.com", devstack.DemoWorkspace, member.Member)
	if err := accountsdb.New(s.Store).CreateWorkspace(ctx, auth.Workspace{ID: "ws_side", Name: "Side project", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := membersdb.New(s.Store).AddMember(ctx, member.Membership{WorkspaceID: "ws_side", UserID: user, Email: "ana@example.com", Role: member.Member, AddedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	client := assistant(t, s, "Helpful Assistant")
	query := authorizeQuery(s, client)
	b := newBrowser(t, s)

	p := b.get("/app/oauth/authorize?" + query)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/app/sign-in?next=") {
		t.Fatalf("not signed in: %d %q; want the sign-in page", p.status, p.location)
	}
	next, _ := url.ParseQuery(strings.TrimPrefix(p.location, "/app/sign-in?"))
	if next.Get("next") != "/app/oauth/authorize?"+query {
		t.Fatalf("sign-in's next is %q; want the same request", next.Get("next"))
	}
	if p := b.post("/app/sign-in", url.Values{"email": {"ana@example.com"}, "password": {password}, "next": {next.Get("next")}}); p.status != http.StatusSeeOther || p.location != next.Get("next") {
		t.Fatalf("signed in: %d %q; want back to the request", p.status, p.location)
	}
	p = b.get("/app/oauth/authorize?" + query)
	for _, want := range []string{"Helpful Assistant", `id="consent-unverified"`, "assistant.example", "compute units", "Side project", `value="` + devstack.DemoWorkspace + `"`} {
		if p.status != http.StatusOK || !strings.Contains(p.body, want) {
			t.Fatalf("consent page (%d) lacks %q:\n%s", p.status, want, p.body)
		}
	}

	// Refused, nothing issued: no CSRF token, another origin, a
	// workspace that is not the person's.
	noCSRF := consent(b, query, "ws_side", "allow")
	noCSRF.Del("csrf")
	if p := b.post("/app/oauth/authorize", noCSRF); p.status != http.StatusForbidden || p.location != "" {
		t.Errorf("consent without CSRF: %d %q; want 403", p.status, p.location)
	}
	b.origin = "https://evil.example"
	if p := b.post("/app/oauth/authorize", consent(b, query, "ws_side", "allow")); p.status != http.StatusForbidden || p.location != "" {
		t.Errorf("consent from another origin: %d %q; want 403", p.status, p.location)
	}
	b.origin = s.URL
	if p := b.post("/app/oauth/authorize", consent(b, query, "ws_someone_else", "allow")); p.status != http.StatusNotFound || p.location != "" {
		t.Errorf("consent for another's workspace: %d %q; want 404", p.status, p.location)
	}
	if n := codesIssued(t, s); n != 0 {
		t.Fatalf("%d codes issued by refused consents", n)
	}

	p = b.post("/app/oauth/authorize", consent(b, query, "ws_side", "deny"))
	if to, _ := url.Parse(p.location); p.status != http.StatusSeeOther || to == nil || to.Query().Get("error") != "access_denied" || to.Query().Get("state") != "st-123" || to.Query().Has("code") {
		t.Fatalf("deny: %d %q; want access_denied with the state", p.status, p.location)
	}
	p = b.post("/app/oauth/authorize", consent(b, query, "ws_side", "allow"))
	to, _ := url.Parse(p.location)
	if p.status != http.StatusSeeOther || to == nil || !strings.HasPrefix(p.location, assistantRedirect+"?") || to.Query().Get("state") != "st-123" || to.Query().Get("code") == "" {
		t.Fatalf("allow: %d %q; want the redirect URI with a code and the state", p.status, p.location)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {to.Query().Get("code")}, "client_id": {client},
		"redirect_uri": {assistantRedirect}, "code_verifier": {verifier}, "resource": {s.URL + "/mcp"}}
	resp, err := http.PostForm(s.URL+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the code at /oauth/token: %d", resp.StatusCode)
	}
	gs, err := oauthdb.New(s.Store).GrantsOfPerson(ctx, user)
	if err != nil || len(gs) != 1 || gs[0].WorkspaceID != "ws_side" || gs[0].ClientName != "Helpful Assistant" {
		t.Fatalf("grants of the person: %+v, %v; want one, billed to ws_side", gs, err)
	}
}

// TestAuthorizeNeverRedirectsWhereTheClientDidNotRegister: an unknown
// client, or a redirect URI that is not exactly a registered one (another
// host, userinfo, a fragment, another path), is an error page, never a
// redirect; a request the client got wrong otherwise goes back to its own
// redirect URI with RFC 6749's error; a consent whose posted request was
// altered is checked again; a sign-in's next that leaves the console is
// not followed.
func TestAuthorizeNeverRedirectsWhereTheClientDidNotRegister(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	client := assistant(t, s, "Helpful Assistant")
	for name, query := range map[string]string{
		"unknown client":    authorizeQuery(s, "oc_00000000000000000000000000000000"),
		"another host":      authorizeQuery(s, client, "redirect_uri", "https://evil.example/callback"),
		"userinfo":          authorizeQuery(s, client, "redirect_uri", "https://assistant.example@evil.example/callback"),
		"a fragment":        authorizeQuery(s, client, "redirect_uri", assistantRedirect+"#x"),
		"another path":      authorizeQuery(s, client, "redirect_uri", "https://assistant.example/callback/../other"),
		"no redirect_uri":   authorizeQuery(s, client, "redirect_uri", ""),
		"no client_id":      authorizeQuery(s, client, "client_id", ""),
		"a malformed query": "client_id=%zz",
	} {
		p := b.get("/app/oauth/authorize?" + query)
		if p.status != http.StatusBadRequest || p.location != "" || !strings.Contains(p.body, "Nothing was sent back") && name != "a malformed query" {
			t.Errorf("%s: %d %q; want an error page (400), no redirect", name, p.status, p.location)
		}
		// The same request posted as a consent: no code, no redirect.
		if p := b.post("/app/oauth/authorize", consent(b, query, devstack.DemoWorkspace, "allow")); p.location != "" || p.status != http.StatusBadRequest {
			t.Errorf("%s, posted: %d %q; want an error page", name, p.status, p.location)
		}
	}
	if p := b.get("/app/oauth/authorize?" + strings.Repeat("x", 9000)); p.status != http.StatusRequestURITooLong || p.location != "" {
		t.Errorf("an oversized request: %d %q; want 414, no redirect", p.status, p.location)
	}
	for name, c := range map[string]struct{ query, err string }{
		"no PKCE":          {authorizeQuery(s, client, "code_challenge", "", "code_challenge_method", ""), "invalid_request"},
		"plain PKCE":       {authorizeQuery(s, client, "code_challenge_method", "plain"), "invalid_request"},
		"another resource": {authorizeQuery(s, client, "resource", "https://other.example/mcp"), "invalid_target"},
		"token flow":       {authorizeQuery(s, client, "response_type", "token"), "unsupported_response_type"},
		"an unknown scope": {authorizeQuery(s, client, "scope", "admin"), "invalid_scope"},
	} {
		p := b.get("/app/oauth/authorize?" + c.query)
		to, _ := url.Parse(p.location)
		if p.status != http.StatusSeeOther || to == nil || !strings.HasPrefix(p.location, assistantRedirect+"?") || to.Query().Get("error") != c.err || to.Query().Get("state") != "st-123" {
			t.Errorf("%s: %d %q; want the redirect URI with error=%s", name, p.status, p.location, c.err)
		}
	}
	if n := codesIssued(t, s); n != 0 {
		t.Fatalf("%d codes issued by refused requests", n)
	}
	// A sign-in's next outside the console is not followed.
	for _, next := range []string{"https://evil.example/app/", "//evil.example/app/oauth/authorize", "/\\evil.example"} {
		b2 := newBrowser(t, s)
		if p := b2.post("/app/sign-in", url.Values{"email": {"owner@example.com"}, "password": {password}, "next": {next}}); p.location != "/app/settings/api-tokens" {
			t.Errorf("sign in with next %q: sent to %q", next, p.location)
		}
	}
}

// grant makes a live connection of user to ws, as the token endpoint does.
func grant(t *testing.T, s *devstacktest.Stack, client, user, ws string) string {
	t.Helper()
	ctx := context.Background()
	db := oauthdb.New(s.Store)
	code := oauthdb.NewSecret()
	now := time.Now()
	if err := db.IssueCode(ctx, code, oauthdb.Code{ClientID: client, RedirectURI: assistantRedirect, Challenge: challenge(verifier),
		Resource: s.URL + "/mcp", Scope: "jobs", UserID: user, WorkspaceID: ws, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	g := oauthdb.Grant{ID: oauthdb.NewID("gr_"), ClientID: client, ClientName: "Helpful Assistant", RedirectURI: assistantRedirect,
		UserID: user, WorkspaceID: ws, Scope: "jobs", Resource: s.URL + "/mcp", CreatedAt: now}
	if err := db.Redeem(ctx, code, g, oauthdb.NewSecret(), now); err != nil {
		t.Fatal(err)
	}
	return g.ID
}

func live(t *testing.T, s *devstacktest.Stack, id string) bool {
	t.Helper()
	g, err := oauthdb.New(s.Store).Grant(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return g.Live()
}

// TestConnectionsAreRevokedByTheirPersonOrAnOwner: the connections page
// lists a person's connections and, for an owner, everyone's in the
// workspace; a member revokes their own but not another's (403, still
// live); an owner revokes anyone's; removing a member revokes theirs.
func TestConnectionsAreRevokedByTheirPersonOrAnOwner(t *testing.T) {
	s, owner := signedIn(t, member.Owner)
	client := assistant(t, s, "Helpful Assistant")
	ana := person(t, s, "ana@example.com", devstack.DemoWorkspace, member.Admin)
	anaBrowser := newBrowser(t, s)
	anaBrowser.signIn("ana@example.com", password)
	ownerID, err := membersdb.New(s.Store).Members(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	var ownerUser string
	for _, m := range ownerID {
		if m.Email == "owner@example.com" {
			ownerUser = m.UserID
		}
	}
	ownersOwn := grant(t, s, client, ownerUser, devstack.DemoWorkspace)
	anas, anasOther, anasLast := grant(t, s, client, ana, devstack.DemoWorkspace), grant(t, s, client, ana, devstack.DemoWorkspace), grant(t, s, client, ana, devstack.DemoWorkspace)

	p := anaBrowser.get("/app/settings/connections")
	if p.status != http.StatusOK || !strings.Contains(p.body, anas) || strings.Contains(p.body, ownersOwn) || strings.Contains(p.body, "workspace-connections") {
		t.Fatalf("ana's connections page (%d) should list her own only:\n%s", p.status, p.body)
	}
	if p := anaBrowser.post("/app/settings/connections/"+ownersOwn+"/revoke", anaBrowser.form(devstack.DemoWorkspace)); p.status != http.StatusForbidden || !live(t, s, ownersOwn) {
		t.Errorf("an admin revoking the owner's connection: %d; want 403 and the connection live", p.status)
	}
	for _, bad := range []string{"gr_nope", "gr_" + strings.Repeat("0", 32)} {
		if p := anaBrowser.post("/app/settings/connections/"+bad+"/revoke", anaBrowser.form(devstack.DemoWorkspace)); p.status != http.StatusNotFound {
			t.Errorf("revoking %s: %d; want 404", bad, p.status)
		}
	}
	if p := anaBrowser.post("/app/settings/connections/"+anas+"/revoke", anaBrowser.form(devstack.DemoWorkspace)); p.status != http.StatusSeeOther || live(t, s, anas) {
		t.Errorf("ana revoking her own: %d; want 303 and the connection revoked", p.status)
	}
	p = owner.get("/app/settings/connections")
	if p.status != http.StatusOK || !strings.Contains(p.body, "workspace-connections") || !strings.Contains(p.body, anasOther) || !strings.Contains(p.body, "ana@example.com") || strings.Contains(p.body, anas) {
		t.Fatalf("the owner's connections page (%d) should list ana's live connections:\n%s", p.status, p.body)
	}
	if p := owner.post("/app/settings/connections/"+anasOther+"/revoke", owner.form(devstack.DemoWorkspace)); p.status != http.StatusSeeOther || live(t, s, anasOther) {
		t.Errorf("the owner revoking ana's: %d; want 303 and the connection revoked", p.status)
	}
	if p := owner.post("/app/settings/members/"+ana+"/remove", owner.form(devstack.DemoWorkspace)); p.status != http.StatusSeeOther {
		t.Fatalf("remove ana: %d", p.status)
	}
	if live(t, s, anasLast) || !live(t, s, ownersOwn) {
		t.Errorf("after ana's removal: her last connection live %v, the owner's live %v; want revoked, live", live(t, s, anasLast), live(t, s, ownersOwn))
	}
}
