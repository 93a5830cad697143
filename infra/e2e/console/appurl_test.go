package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/member"
)

// apiDomain is the execute-api domain API Gateway puts in the events'
// requestContext.domainName: the tests below send it as the requests' Host,
// and the API Gateway stand-in hands it to the functions as AWS does.
const apiDomain = "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"

// domainBrowser is a browser of the console reached at apiDomain over
// HTTPS: it keeps the session's cookies itself (a cookie jar would keep
// Secure cookies from the stand-in's http:// address).
type domainBrowser struct {
	t       *testing.T
	stack   *devstacktest.Stack
	client  *http.Client
	cookies map[string]string
}

func (b *domainBrowser) do(method, path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.stack.URL+path, body)
	req.Host = apiDomain
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://"+apiDomain)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	for name, value := range b.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if !c.Secure {
			b.t.Errorf("cookie %s is not Secure on an https deployment", c.Name)
		}
		b.cookies[c.Name] = c.Value
	}
	return resp, string(text)
}

// With the template's AppUrl left empty (its default), the addresses the
// service hands out are the deployment's own: Stripe sends a payer back to
// https://{api domain}/app, a share link opens there, and the console's
// forms are trusted from that domain and no other.
func TestAnEmptyAppUrlIsTheRequestsAPIDomain(t *testing.T) {
	s := devstacktest.Start(t, func(l *devstack.Stack) { l.AppURLFromRequest = true })
	person(t, s, "owner@example.com", devstack.DemoWorkspace, member.Owner)
	b := &domainBrowser{t: t, stack: s, cookies: map[string]string{}, client: &http.Client{Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	app := "https://" + apiDomain + "/app"

	if resp, body := b.do(http.MethodPost, "/app/sign-in", url.Values{"email": {"owner@example.com"}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in from the API's own domain: %d\n%s", resp.StatusCode, body)
	}
	_, tokensPage := b.do(http.MethodGet, "/app/settings/api-tokens", nil)
	m := csrfField.FindStringSubmatch(tokensPage)
	if m == nil {
		t.Fatal("no CSRF token on the tokens page")
	}
	topUp := url.Values{"csrf": {m[1]}, "workspace": {devstack.DemoWorkspace}, "amount": {"25"}}

	if resp, _ := b.do(http.MethodPost, "/app/settings/billing/top-up", topUp, "Origin", "https://app.example.com"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a form from another origin: %d, want 403", resp.StatusCode)
	}
	resp, body := b.do(http.MethodPost, "/app/settings/billing/top-up", topUp)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "/pay/cs_test_") {
		t.Fatalf("top-up: %d %q\n%s", resp.StatusCode, loc, body)
	}
	cs, ok := s.Stripe.Session(loc[strings.LastIndex(loc, "/")+1:])
	if !ok {
		t.Fatalf("the double has no session behind %s", loc)
	}
	if cs.SuccessURL != app+"/settings/billing?checkout={CHECKOUT_SESSION_ID}" || !strings.HasPrefix(cs.CancelURL, app+"/settings/billing") {
		t.Errorf("Stripe's return URLs: success %q, cancel %q; want them under %s", cs.SuccessURL, cs.CancelURL, app)
	}

	resp, body = b.do(http.MethodGet, "/styles/sty_demo_api_sketch/share/link", nil, "Authorization", "Bearer "+s.Token)
	var link struct {
		ShareLink string `json:"share_link"`
	}
	if err := json.Unmarshal([]byte(body), &link); err != nil || resp.StatusCode != http.StatusCreated ||
		!strings.HasPrefix(link.ShareLink, app+"/styles/shared/") {
		t.Errorf("share link: %d %s; want 201 and a link under %s", resp.StatusCode, body, app)
	}
	if resp, body := b.do(http.MethodGet, strings.TrimPrefix(link.ShareLink, "https://"+apiDomain), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the share link's page: %d\n%s", resp.StatusCode, body)
	}
}
