package authserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"genjobs/internal/authserver"
	"genjobs/internal/httpapi/lambdatest"
)

func TestMetadataIsTheSameDocumentAtBothAddressesWithExactlyTheContractsFields(t *testing.T) {
	e := newEnv(t)
	want := map[string]any{
		"issuer":                                base,
		"authorization_endpoint":                base + "/app/oauth/authorize",
		"token_endpoint":                        base + "/oauth/token",
		"registration_endpoint":                 base + "/oauth/register",
		"revocation_endpoint":                   base + "/oauth/revoke",
		"code_challenge_methods_supported":      []any{"S256"},
		"grant_types_supported":                 []any{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported": []any{"none", "client_secret_post"},
		"response_types_supported":              []any{"code"},
		"client_id_metadata_document_supported": true,
		"scopes_supported":                      []any{"jobs"},
	}
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		rec := e.do("GET", path, "", "")
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, rec.Code)
		}
		if got := decode(t, rec); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", path, got, want)
		}
	}
}

// The whole flow a connector goes through: register, authorize, exchange
// the code with its verifier, use the access token, refresh.
func TestAPublicClientRegistersExchangesItsCodeAndRefreshes(t *testing.T) {
	e := newEnv(t)
	client := e.publicClient()
	access, refresh := e.tokens(codeForm(client, e.approve(authorizeQuery(client))))
	c, err := e.verify(access)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "usr_1" || c.Workspace != "ws_1" || c.Audience != resource || c.Scope != "jobs" || c.ClientID != client ||
		!c.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("access token claims %+v", c)
	}
	e.clock.T = t0.Add(50 * time.Minute)
	access2, refresh2 := e.tokens(refreshForm(client, refresh))
	if refresh2 == refresh {
		t.Error("the refresh token was not rotated")
	}
	if c2, err := e.verify(access2); err != nil || c2.Grant != c.Grant || !c2.ExpiresAt.Equal(e.clock.T.Add(time.Hour)) {
		t.Errorf("refreshed access token %+v, %v", c2, err)
	}
}

// Bad input: a refresh token used twice. The second use is refused and
// revokes the grant, so the token the first use gave stops working too.
func TestARefreshTokenUsedTwiceRevokesTheConnection(t *testing.T) {
	e := newEnv(t)
	client := e.publicClient()
	_, r1 := e.tokens(codeForm(client, e.approve(authorizeQuery(client))))
	_, r2 := e.tokens(refreshForm(client, r1))
	wantError(t, e.post("/oauth/token", refreshForm(client, r1)), 400, "invalid_grant")
	wantError(t, e.post("/oauth/token", refreshForm(client, r2)), 400, "invalid_grant")
}

// Bad input: a code used twice; what the first use issued is revoked.
func TestACodeUsedTwiceIsRefusedAndRevokesWhatTheFirstUseIssued(t *testing.T) {
	e := newEnv(t)
	client := e.publicClient()
	code := e.approve(authorizeQuery(client))
	_, refresh := e.tokens(codeForm(client, code))
	wantError(t, e.post("/oauth/token", codeForm(client, code)), 400, "invalid_grant")
	wantError(t, e.post("/oauth/token", refreshForm(client, refresh)), 400, "invalid_grant")
}

// Bad input at the token endpoint: each refused with RFC 6749's error, and
// the code left unused when the mistake is the request's.
func TestTheTokenEndpointRefusesWhatDoesNotMatchTheCode(t *testing.T) {
	e := newEnv(t)
	client, other := e.publicClient(), e.publicClient()
	code := e.approve(authorizeQuery(client))
	with := func(k, v string) url.Values {
		f := codeForm(client, code)
		if v == "" {
			f.Del(k)
		} else {
			f.Set(k, v)
		}
		return f
	}
	for name, c := range map[string]struct {
		form   url.Values
		status int
		code   string
	}{
		"a wrong verifier":            {with("code_verifier", strings.Repeat("a", 43)), 400, "invalid_grant"},
		"no verifier":                 {with("code_verifier", ""), 400, "invalid_grant"},
		"another redirect_uri":        {with("redirect_uri", redirect+"/x"), 400, "invalid_grant"},
		"another client's code":       {with("client_id", other), 400, "invalid_grant"},
		"an unknown client":           {with("client_id", "oc_nobody"), 401, "invalid_client"},
		"no client":                   {with("client_id", ""), 401, "invalid_client"},
		"another resource":            {with("resource", "https://api.test/other"), 400, "invalid_target"},
		"an unknown code":             {with("code", "nope"), 400, "invalid_grant"},
		"another grant type":          {with("grant_type", "password"), 400, "unsupported_grant_type"},
		"no grant type":               {with("grant_type", ""), 400, "invalid_request"},
		"a parameter given twice":     {func() url.Values { f := codeForm(client, code); f.Add("code", "x"); return f }(), 400, "invalid_request"},
		"client_secret_basic instead": {nil, 401, "invalid_client"},
	} {
		t.Run(name, func(t *testing.T) {
			if c.form == nil {
				r := httptest.NewRequest("POST", "/oauth/token", strings.NewReader(codeForm(client, code).Encode()))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				r.SetBasicAuth(client, "secret")
				wantError(t, lambdatest.Serve(e.h, r), c.status, c.code)
				return
			}
			wantError(t, e.post("/oauth/token", c.form), c.status, c.code)
		})
	}
}

// Bad input: an expired code (60 seconds).
func TestACodeExpiresAfterSixtySeconds(t *testing.T) {
	e := newEnv(t)
	client := e.publicClient()
	code := e.approve(authorizeQuery(client))
	e.clock.T = t0.Add(61 * time.Second)
	wantError(t, e.post("/oauth/token", codeForm(client, code)), 400, "invalid_grant")
}

// A confidential client (claude.ai's connector registers as one) gets a
// secret once; the token endpoint wants it, and PKCE as well.
func TestAConfidentialClientAuthenticatesWithItsSecretInTheForm(t *testing.T) {
	e := newEnv(t)
	client, secret := e.register(`{"client_name":"Claude","redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"client_secret_post"}`)
	if secret == "" {
		t.Fatal("no client_secret for a client_secret_post registration")
	}
	code := e.approve(authorizeQuery(client))
	f := codeForm(client, code)
	wantError(t, e.post("/oauth/token", f), 401, "invalid_client")
	f.Set("client_secret", "not-it")
	wantError(t, e.post("/oauth/token", f), 401, "invalid_client")
	f.Set("client_secret", secret)
	f.Set("code_verifier", strings.Repeat("b", 43))
	wantError(t, e.post("/oauth/token", f), 400, "invalid_grant")
	f.Set("code_verifier", verifier)
	e.tokens(f)
}

// Bad input at registration: 400 with RFC 7591's error, nothing stored.
func TestRegistrationRefusesBadMetadataAndStoresNothing(t *testing.T) {
	e := newEnv(t)
	many := make([]string, 11)
	for i := range many {
		many[i] = redirect + "/" + string(rune('a'+i))
	}
	manyJSON, _ := json.Marshal(many)
	for name, c := range map[string]struct{ body, code string }{
		"javascript: URI":       {`{"redirect_uris":["javascript:alert(1)"]}`, "invalid_redirect_uri"},
		"data: URI":             {`{"redirect_uris":["data:text/html,<script>alert(1)</script>"]}`, "invalid_redirect_uri"},
		"more than 10 URIs":     {`{"redirect_uris":` + string(manyJSON) + `}`, "invalid_redirect_uri"},
		"a fragment":            {`{"redirect_uris":["https://a.test/cb#x"]}`, "invalid_redirect_uri"},
		"http off loopback":     {`{"redirect_uris":["http://a.test/cb"]}`, "invalid_redirect_uri"},
		"user information":      {`{"redirect_uris":["https://user@a.test/cb"]}`, "invalid_redirect_uri"},
		"no redirect URI":       {`{"client_name":"x"}`, "invalid_redirect_uri"},
		"a URI over 2000 chars": {`{"redirect_uris":["https://a.test/` + strings.Repeat("a", 2000) + `"]}`, "invalid_redirect_uri"},
		"oversized metadata":    {`{"redirect_uris":["https://a.test/cb"],"contacts":["` + strings.Repeat("a", 17<<10) + `"]}`, "invalid_client_metadata"},
		"a long client_name":    {`{"redirect_uris":["https://a.test/cb"],"client_name":"` + strings.Repeat("a", 201) + `"}`, "invalid_client_metadata"},
		"client_secret_basic":   {`{"redirect_uris":["https://a.test/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, "invalid_client_metadata"},
		"another grant type":    {`{"redirect_uris":["https://a.test/cb"],"grant_types":["client_credentials"]}`, "invalid_client_metadata"},
		"not JSON":              {`redirect_uris=x`, "invalid_client_metadata"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := e.do("POST", "/oauth/register", "application/json", c.body)
			wantError(t, rec, 400, c.code)
			if d, _ := decode(t, rec)["error_description"].(string); d == "" {
				t.Error("no error_description")
			}
		})
	}
	if n := e.items(); n != 0 {
		t.Errorf("%d items written by refused registrations", n)
	}
	// http on a loopback host, any port, is a native app's.
	e.register(`{"redirect_uris":["http://127.0.0.1:33418/callback","http://localhost/cb","http://[::1]:8080/"]}`)
}

// Bad input at the authorization step: an unknown client or a redirect URI
// that is not exactly a registered one is an error page, never a redirect.
func TestAuthorizeShowsAnErrorPageForAnUnknownClientOrARedirectURIThatIsNotRegistered(t *testing.T) {
	e := newEnv(t)
	client := e.publicClient()
	loop, _ := e.register(`{"redirect_uris":["http://127.0.0.1:33418/callback"]}`)
	page := func(q url.Values) {
		t.Helper()
		_, err := e.srv.ParseAuthorize(context.Background(), base, q)
		var pe *authserver.PageError
		if !errors.As(err, &pe) {
			t.Errorf("redirect_uri %q of %s: %v; want an error page", q.Get("redirect_uri"), q.Get("client_id"), err)
		}
	}
	for _, r := range []string{
		"https://evil.test@assistant.test/callback", // userinfo
		"https://assistant.test:8443/callback",      // another port for https
		"https://assistant.test/callback/../evil",   // path tricks
		"https://assistant.test/callback/",
		"https://assistant.test/callback#frag", // a fragment
		"https://assistant.test/callback?x=1",
		"https://assistant.test.evil.test/callback",
		"http://assistant.test/callback",
	} {
		q := authorizeQuery(client)
		q.Set("redirect_uri", r)
		page(q)
	}
	q := authorizeQuery("oc_unknown")
	page(q)
	q = authorizeQuery(client)
	q.Del("redirect_uri")
	page(q)
	// Loopback: another port is the same native app; another path is not.
	q = authorizeQuery(loop)
	q.Set("redirect_uri", "http://127.0.0.1:50123/callback")
	if _, err := e.srv.ParseAuthorize(context.Background(), base, q); err != nil {
		t.Errorf("a loopback redirect on another port: %v", err)
	}
	q.Set("redirect_uri", "http://127.0.0.1:50123/other")
	page(q)
}

// Bad input at the authorization step whose client and redirect URI are
// good: the error goes back to the client, with its state.
func TestAuthorizeRedirectsTheClientsOwnMistakesBackToIt(t *testing.T) {
	e := newEnv(t)
	client := e.publicClient()
	for name, c := range map[string]struct {
		key, value, code string
	}{
		"no PKCE":               {"code_challenge", "", "invalid_request"},
		"plain":                 {"code_challenge_method", "plain", "invalid_request"},
		"no method (plain)":     {"code_challenge_method", "", "invalid_request"},
		"another resource":      {"resource", "https://api.test/other", "invalid_target"},
		"an unknown scope":      {"scope", "jobs admin", "invalid_scope"},
		"another response":      {"response_type", "token", "unsupported_response_type"},
		"a malformed challenge": {"code_challenge", "short", "invalid_request"},
	} {
		t.Run(name, func(t *testing.T) {
			q := authorizeQuery(client)
			if c.value == "" {
				q.Del(c.key)
			} else {
				q.Set(c.key, c.value)
			}
			_, err := e.srv.ParseAuthorize(context.Background(), base, q)
			var re *authserver.RedirectError
			if !errors.As(err, &re) {
				t.Fatalf("%v; want a redirect with the error", err)
			}
			u, _ := url.Parse(re.Location)
			if !strings.HasPrefix(re.Location, redirect+"?") || u.Query().Get("error") != c.code || u.Query().Get("state") != "st-1" {
				t.Errorf("redirect to %s; want %s with error=%s and the state", re.Location, redirect, c.code)
			}
		})
	}
	if n := e.items(); n != 1 {
		t.Errorf("%d items; refused requests wrote codes", n)
	}
	req, err := e.srv.ParseAuthorize(context.Background(), base, authorizeQuery(client))
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(authserver.Deny(req)); u.Query().Get("error") != "access_denied" || u.Query().Get("state") != "st-1" {
		t.Errorf("Deny sends the browser to %s", authserver.Deny(req))
	}
}

// RFC 7009: revoking either token ends the connection; an unknown token is
// answered 200; another client's token is refused and stays good.
func TestRevocationEndsTheConnection(t *testing.T) {
	e := newEnv(t)
	client, other := e.publicClient(), e.publicClient()
	revoke := func(clientID, token string) int {
		t.Helper()
		return e.post("/oauth/revoke", url.Values{"client_id": {clientID}, "token": {token}}).Code
	}
	_, r1 := e.tokens(codeForm(client, e.approve(authorizeQuery(client))))
	if code := revoke(other, r1); code != 400 {
		t.Errorf("another client's revocation: %d; want 400", code)
	}
	if code := revoke(client, "not-a-token"); code != 200 {
		t.Errorf("an unknown token: %d; want 200", code)
	}
	_, r1 = e.tokens(refreshForm(client, r1))
	if code := revoke(client, r1); code != 200 {
		t.Fatalf("revoking the refresh token: %d", code)
	}
	wantError(t, e.post("/oauth/token", refreshForm(client, r1)), 400, "invalid_grant")

	access, r2 := e.tokens(codeForm(client, e.approve(authorizeQuery(client))))
	if code := revoke(client, access); code != 200 {
		t.Fatalf("revoking the access token: %d", code)
	}
	wantError(t, e.post("/oauth/token", refreshForm(client, r2)), 400, "invalid_grant")
}
