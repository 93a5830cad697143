// Package attack_test sends what an attacker would to every route of the
// local stack, through API Gateway's stand-in and the Lambda adapter as in
// AWS, and holds that no request anyone can send is answered with a 5xx:
// every route template.yaml declares, with hostile path values, bodies,
// headers and credentials; every form of the console a signed-in owner can
// reach, each field in turn given a hostile value. A 5xx there is a defect:
// a client mistake must get a 4xx that says what is wrong.
package attack_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/infra/local/sam"
	"genjobs/internal/billing"
	"genjobs/internal/checkout/stripedouble"
	"genjobs/internal/emulator"
	"genjobs/internal/member"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/topupsdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Bounds of the whole run: it stops sending at either and says so.
const (
	maxRequests = 3000
	maxDuration = 4 * time.Minute
)

// hostileSegments replace one path parameter at a time: traversal, encoded
// separators, NUL, markup, SQL, bidi, oversize, ids of the right shape that
// name nothing or another workspace's.
var hostileSegments = []string{
	".", "..", "%2e%2e", "..%2f..%2fetc%2fpasswd", "%2F", "%00", "%ff%fe", "%25",
	"%3Cscript%3Ealert(1)%3C%2Fscript%3E", "'%20OR%201%3D1--", "%E2%80%AE", "-1", "0",
	strings.Repeat("a", 2048), "job_00000000000000000000000000", "j_zzzzzzzzzzzzzzzz", "~", "%20",
}

// hostileBodies are sent to every route that takes a body.
var hostileBodies = []struct {
	name, contentType string
	body              []byte
}{
	{"empty", "application/json", nil},
	{"truncated JSON", "application/json", []byte(`{"prompt":`)},
	{"null", "application/json", []byte(`null`)},
	{"array", "application/json", []byte(`[1,2,3]`)},
	{"wrong types", "application/json", []byte(`{"prompt":1,"image":{},"seed":"x","width":-1e400,"styles":null}`)},
	{"huge number", "application/json", []byte(`{"seed":1e400,"width":99999999999999999999999999}`)},
	{"deep nesting", "application/json", []byte(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))},
	{"invalid UTF-8", "application/json", []byte("{\"prompt\":\"\xff\xfe\xfd\"}")},
	{"duplicate keys", "application/json", []byte(`{"prompt":"a","prompt":{"x":1}}`)},
	{"1 MiB string", "application/json", []byte(`{"prompt":"` + strings.Repeat("x", 1<<20) + `"}`)},
	{"form as JSON", "application/json", []byte(`a=b&c=d`)},
	{"plain text", "text/plain", []byte(`hello`)},
	{"multipart without boundary", "multipart/form-data", []byte(`--x\r\n`)},
	{"form garbage", "application/x-www-form-urlencoded", []byte(`%zz=%zz&a=%`)},
	{"no content type", "", []byte(`{"prompt":"a cat"}`)},
	{"JSON-RPC unknown method", "application/json", []byte(`{"jsonrpc":"2.0","id":1,"method":"no/such"}`)},
	{"JSON-RPC call with dot id", "application/json", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_job","arguments":{"job_id":".."}}}`)},
	{"JSON-RPC call with bad args", "application/json", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_job","arguments":{"endpoint":"../../x","input":[]}}}`)},
	{"JSON-RPC batch", "application/json", []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2}]`)},
	{"Stripe-like event", "application/json", []byte(`{"id":"evt_1","type":"checkout.session.completed","data":{"object":{"id":"cs_1","amount_total":9223372036854775807,"currency":"usd","client_reference_id":"ws_demo","metadata":{"topup_id":"x"}}}}`)},
}

// hostileHeaders are sent, one set at a time, with a body the route takes.
var hostileHeaders = []map[string]string{
	{"Idempotency-Key": strings.Repeat("k", 10000)},
	{"Idempotency-Key": "\u202e\u00e9"},
	{"X-Webhook-URL": "javascript:alert(1)"},
	{"X-Webhook-URL": "http://169.254.169.254/latest/meta-data/"},
	{"X-Webhook-URL": "http://" + strings.Repeat("a", 3000) + ".example/"},
	{"Stripe-Signature": "t=99999999999999999999999,v1=zz"},
	{"Stripe-Signature": "t=,v1=,v1="},
	{"webhook-signature": "v1,AAAA", "webhook-id": "x", "webhook-timestamp": "-1"},
	{"Cookie": "genjobs_session=" + strings.Repeat("%", 500)},
	{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
	{"Accept": "text/event-stream"},
	{"Mcp-Session-Id": "../../"},
	{"Content-Length": "0"},
}

type finding struct{ method, path, what, status, body string }

type attacker struct {
	t        *testing.T
	base     string
	client   *http.Client
	deadline time.Time
	sent     int
	stopped  bool
	found    map[string]finding
}

func (a *attacker) send(method, path, what string, body []byte, header map[string]string) (int, string) {
	a.t.Helper()
	if a.sent >= maxRequests || time.Now().After(a.deadline) {
		a.stopped = true
		return 0, ""
	}
	a.sent++
	req, err := http.NewRequest(method, a.base+path, bytes.NewReader(body))
	if err != nil { // a path no client library can send is no attack
		return 0, ""
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.record(method, path, what, "no answer: "+err.Error(), "")
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 500 {
		a.record(method, path, what, resp.Status, string(b))
	}
	return resp.StatusCode, string(b)
}

func (a *attacker) record(method, path, what, status, body string) {
	key := method + " " + path + " " + what
	if len(body) > 300 {
		body = body[:300]
	}
	if len(path) > 120 {
		path = path[:120] + "…"
	}
	a.found[key] = finding{method, path, what, status, body}
}

func TestNoRequestAnyoneCanSendGetsA5xx(t *testing.T) {
	s := devstacktest.Start(t)
	other := s.Workspace(t, "ws_other", 10_000_000, 5, 5)
	tpl := template(t)
	jar, _ := cookiejar.New(nil)
	a := &attacker{t: t, base: s.URL, deadline: time.Now().Add(maxDuration), found: map[string]finding{},
		client: &http.Client{Jar: jar, Timeout: 40 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}

	// A job of each workspace, so that ids of the right shape name something.
	own := createJob(t, a, s.Token)
	theirs := createJob(t, a, other)

	credentials := map[string]string{
		"the workspace's token": "Bearer " + s.Token, "another workspace's token": "Bearer " + other,
		"no token": "", "a malformed token": "Bearer gjs_" + strings.Repeat("x", 500), "basic auth": "Basic YTpi",
	}
	for _, r := range tpl.Routes() {
		if r.Path == "$default" {
			r.Path = "/no/such/route"
		}
		methods := []string{r.Method}
		if r.Method == "ANY" {
			methods = []string{"GET", "POST", "PUT", "DELETE"}
		}
		path := fill(r.Path, map[string]string{"id": own, "job_id": own, "provider": "replicate"})
		for _, m := range methods {
			for who, auth := range credentials {
				a.send(m, path, who, []byte(`{"prompt":"a cat"}`), map[string]string{"Authorization": auth, "Content-Type": "application/json"})
			}
			for _, param := range params(r.Path) {
				for _, v := range append(slices.Clone(hostileSegments), theirs) {
					p := fill(r.Path, map[string]string{"id": own, "job_id": own, "provider": "replicate", param: v})
					a.send(m, p, "path {"+param+"} = "+v, []byte(`{}`), map[string]string{"Authorization": "Bearer " + s.Token, "Content-Type": "application/json"})
				}
			}
			if m == "GET" || m == "DELETE" {
				continue
			}
			for _, b := range hostileBodies {
				a.send(m, path, "body: "+b.name, b.body, map[string]string{"Authorization": "Bearer " + s.Token, "Content-Type": b.contentType})
			}
			for _, h := range hostileHeaders {
				h = mergeHeader(h, map[string]string{"Authorization": "Bearer " + s.Token, "Content-Type": "application/json"})
				a.send(m, path, fmt.Sprintf("headers %v", keys(h)), []byte(`{"prompt":"a cat"}`), h)
			}
		}
	}
	for _, q := range []string{"?limit=-1", "?limit=99999999999999999999", "?cursor=%00%ff", "?cursor=" + strings.Repeat("A", 5000),
		"?status=nonsense", "?filter=../../", "?days=0", "?from=yesterday&to=%00"} {
		for _, p := range []string{"/jobs", "/styles", "/usage"} {
			a.send("GET", p+q, "query "+q, nil, map[string]string{"Authorization": "Bearer " + s.Token})
		}
	}

	attackConsole(t, a, s)

	if a.stopped {
		t.Logf("the run reached its bound (%d requests or %s) before the end", maxRequests, maxDuration)
	}
	t.Logf("%d hostile requests sent", a.sent)
	if len(a.found) > 0 {
		ks := keys(a.found)
		for _, k := range ks {
			f := a.found[k]
			t.Errorf("%s %s (%s): %s %s", f.method, f.path, f.what, f.status, f.body)
		}
	}
}

// attackConsole signs an owner in and sends every form the console's pages
// hold, reached by following the console's links, with each field in turn
// given a hostile value, and the CSRF token kept valid so that the
// handlers behind the checks are reached.
func attackConsole(t *testing.T, a *attacker, s *devstacktest.Stack) {
	email, password := "attack-owner@example.com", "Attack-Password-123!"
	c, err := s.Local.Cognito()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u, _, err := c.EnsureUser(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword(ctx, email, password); err != nil {
		t.Fatal(err)
	}
	if err := membersdb.New(s.Store).AddMember(ctx, member.Membership{WorkspaceID: devstack.DemoWorkspace, UserID: u.UserID,
		Email: email, Role: member.Owner, AddedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	origin := map[string]string{"Origin": s.URL, "Content-Type": "application/x-www-form-urlencoded"}
	signIn := func() {
		a.send("POST", "/app/sign-in", "sign in", []byte(url.Values{"email": {email}, "password": {password}}.Encode()), origin)
	}
	signIn()

	// The pages anyone can reach: the sign-in page and what it links to
	// (its forms sent by someone with no session), and a set-password with
	// a challenge Cognito never issued.
	// Each anonymous request comes from another loopback address and names
	// another person, so that the forms' throttles (10 failures per address
	// and per source) do not stop the run short of the code behind them.
	anonymous := *a
	anonymous.client = &http.Client{Timeout: a.client.Timeout, CheckRedirect: a.client.CheckRedirect, Transport: fromManySources()}
	done := map[string]bool{}
	attackForms(t, &anonymous, crawl(&anonymous, "/app/sign-in"), origin, done, func() {})
	anonymousForms := []struct {
		action string
		fields url.Values
	}{
		{"/app/set-password", url.Values{"challenge": {"AYABeForged"}, "password": {password + "x"}, "password_again": {password + "x"}}},
		{"/app/sign-in/mfa", url.Values{"challenge": {"AYABeForged"}, "code": {"123456"}, "secret": {"JBSWY3DPEHPK3PXP"}, "next": {"/app/settings/api-tokens"}}},
		{"/app/reset-password", url.Values{"code": {"123456"}, "password": {password + "x"}, "password_again": {password + "x"}}},
		{"/app/forgot-password", url.Values{}},
	}
	for i, f := range anonymousForms {
		f.fields.Set("email", fmt.Sprintf("attack-%d@example.com", i))
		for _, field := range keys(f.fields) {
			for j, v := range hostileValues() {
				vals := url.Values{}
				for k, vs := range f.fields {
					vals[k] = vs
				}
				if field != "email" {
					vals.Set("email", fmt.Sprintf("attack-%d-%s-%d@example.com", i, field, j))
				}
				vals.Set(field, v)
				anonymous.send("POST", f.action, "anonymous "+field+" = "+short(v), []byte(vals.Encode()), origin)
			}
		}
	}
	a.sent = anonymous.sent

	signIn()
	attackStripe(t, a, s, origin)
	forms := crawl(a, "/app/settings/api-tokens")
	sort.SliceStable(forms, func(i, j int) bool { return strings.Contains(forms[j].action, "sign-out") })
	attackForms(t, a, forms, origin, done, signIn)
	t.Logf("console forms attacked: %v", keys(done))
	if len(done) < 5 {
		t.Errorf("only %d console forms were reached (%v): the crawl did not sign in", len(done), keys(done))
	}
}

// attackStripe starts a real top-up of 10 USD and sends events about its
// session signed with the endpoint's secret, as only Stripe (or someone
// holding the secret) can, but saying what Stripe would never say for it:
// other amounts, an amount that overflows micro-USD, another currency,
// another workspace, no top-up id, a signature from the future; then the
// genuine event twice. Stripe retries every 5xx for days: each must be a 2xx
// or a 4xx.
func attackStripe(t *testing.T, a *attacker, s *devstacktest.Stack, origin map[string]string) {
	_, body := a.send("GET", "/app/settings/billing", "page", nil, nil)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatal("no CSRF token on the billing page")
	}
	status, _ := a.send("POST", "/app/settings/billing/top-up", "top-up of 10 USD", []byte(url.Values{"csrf": {csrf[1]},
		"workspace": {devstack.DemoWorkspace}, "amount": {"10"}}.Encode()), origin)
	if status != http.StatusSeeOther {
		t.Fatalf("top-up: %d", status)
	}
	var session stripedouble.Session
	for _, id := range s.Stripe.Sessions() {
		session, _ = s.Stripe.Session(id)
	}
	if session.ID == "" {
		t.Fatal("the top-up made no Checkout Session")
	}
	paid := session
	paid.Status, paid.PaymentStatus = "complete", "paid"
	variants := map[string]func(*stripedouble.Session){
		"12,345 USD":               func(x *stripedouble.Session) { x.AmountTotal = 1_234_500 },
		"an amount that overflows": func(x *stripedouble.Session) { x.AmountTotal = 1 << 62 },
		"a negative amount":        func(x *stripedouble.Session) { x.AmountTotal = -1000 },
		"euros":                    func(x *stripedouble.Session) { x.Currency = "eur" },
		"another workspace":        func(x *stripedouble.Session) { x.ClientReferenceID = "ws_other" },
		"no top-up id":             func(x *stripedouble.Session) { x.Metadata = nil },
		"an unknown top-up id":     func(x *stripedouble.Session) { x.Metadata = map[string]string{"topup_id": "top_nope"} },
		"another session id":       func(x *stripedouble.Session) { x.ID = "cs_test_forged" },
		"unpaid":                   func(x *stripedouble.Session) { x.PaymentStatus = "unpaid" },
	}
	for _, name := range keys(variants) {
		x := paid
		x.Metadata = map[string]string{}
		for k, v := range paid.Metadata {
			x.Metadata[k] = v
		}
		variants[name](&x)
		for _, typ := range []string{"checkout.session.completed", "checkout.session.async_payment_succeeded", "checkout.session.expired"} {
			payload := s.Stripe.Event(typ, x)
			a.send("POST", "/webhooks/stripe", "signed "+typ+" with "+name, payload,
				map[string]string{"Content-Type": "application/json", "Stripe-Signature": s.Stripe.Sign(payload, time.Now())})
		}
	}
	payload := s.Stripe.Event("checkout.session.completed", paid)
	for _, at := range []time.Time{time.Now().Add(time.Hour), time.Now(), time.Now()} {
		a.send("POST", "/webhooks/stripe", "the genuine event signed "+time.Until(at).Round(time.Minute).String()+" from now", payload,
			map[string]string{"Content-Type": "application/json", "Stripe-Signature": s.Stripe.Sign(payload, at)})
	}
	cs, err := topupsdb.New(s.Store).Checkouts(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	var credited billing.Micros
	for _, c := range cs {
		credited += c.Credited
	}
	if credited != 10_000_000 {
		t.Errorf("a top-up of 10 USD was credited %d micro-USD after the forged events: %+v", credited, cs)
	}
}

// fromManySources is a transport whose connections come from 127.0.0.2,
// 127.0.0.3, … in turn, none kept for a second request.
func fromManySources() http.RoundTripper {
	var n atomic.Uint32
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		ip := net.IPv4(127, 0, byte(1+n.Add(1)/250%250), byte(2+n.Load()%250))
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 10 * time.Second}
		return d.DialContext(ctx, network, addr)
	}
	return t
}

// crawl follows the console's links from start, at most 60 pages, and
// returns the forms it found.
func crawl(a *attacker, start string) []form {
	seen, queue := map[string]bool{}, []string{start}
	var forms []form
	for len(queue) > 0 && len(seen) < 60 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		_, body := a.send("GET", p, "page", nil, nil)
		for _, l := range links.FindAllStringSubmatch(body, -1) {
			href := strings.ReplaceAll(l[1], "&amp;", "&")
			if strings.HasPrefix(href, "/app/") && !strings.Contains(href, "/assets/") && !seen[href] {
				queue = append(queue, href)
			}
		}
		forms = append(forms, parseForms(body)...)
	}
	return forms
}

// attackForms sends each form once per hostile value of each field, the
// other fields as the page filled them; again is called when an answer
// suggests the session ended.
func attackForms(t *testing.T, a *attacker, forms []form, origin map[string]string, done map[string]bool, again func()) {
	for _, f := range forms {
		if done[f.action] || !strings.HasPrefix(f.action, "/app") {
			continue
		}
		done[f.action] = true
		for _, field := range f.fields {
			if field == "csrf" {
				continue
			}
			for _, v := range hostileValues() {
				vals := url.Values{}
				for _, g := range f.fields {
					vals.Set(g, f.values[g])
				}
				vals.Set(field, v)
				status, _ := a.send("POST", f.action, "field "+field+" = "+short(v), []byte(vals.Encode()), origin)
				if status == http.StatusSeeOther || status == http.StatusForbidden || status == http.StatusUnauthorized {
					again() // a form that signed out, or a session it ended
				}
			}
		}
	}
}

type form struct {
	action string
	fields []string
	values map[string]string
}

var (
	links      = regexp.MustCompile(`href="(/app/[^"#]*)"`)
	formTag    = regexp.MustCompile(`(?s)<form[^>]*method="post"[^>]*action="([^"]+)"[^>]*>(.*?)</form>|<form[^>]*action="([^"]+)"[^>]*method="post"[^>]*>(.*?)</form>`)
	inputTag   = regexp.MustCompile(`<(?:input|select|textarea)[^>]*name="([^"]+)"[^>]*>`)
	inputValue = regexp.MustCompile(`value="([^"]*)"`)
	selectTag  = regexp.MustCompile(`(?s)<select[^>]*name="([^"]+)"[^>]*>.*?<option[^>]*value="([^"]*)"`)
)

func parseForms(body string) []form {
	var out []form
	for _, m := range formTag.FindAllStringSubmatch(body, -1) {
		action, inner := m[1], m[2]
		if action == "" {
			action, inner = m[3], m[4]
		}
		f := form{action: strings.ReplaceAll(action, "&amp;", "&"), values: map[string]string{}}
		for _, in := range inputTag.FindAllStringSubmatch(inner, -1) {
			name := in[1]
			if _, ok := f.values[name]; ok {
				continue
			}
			f.fields = append(f.fields, name)
			if v := inputValue.FindStringSubmatch(in[0]); v != nil {
				f.values[name] = strings.ReplaceAll(v[1], "&#43;", "+")
			} else {
				f.values[name] = "x"
			}
		}
		for _, sel := range selectTag.FindAllStringSubmatch(inner, -1) {
			f.values[sel[1]] = sel[2] // a select's first choice
		}
		out = append(out, f)
	}
	return out
}

func hostileValues() []string {
	return []string{
		"", " ", "a&b@a.example", "<script>alert(1)</script>", strings.Repeat("x", 5000), "\x00", "\xff\xfe",
		"-1", "99999999999999999999999", "1e400", "0.001", "NaN", "../../", "owner\nadmin", "ws_other", "%",
	}
}

func createJob(t *testing.T, a *attacker, token string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", a.base+"/generate/image/vendor-b/model-e-4", strings.NewReader(`{"prompt":"a lighthouse","width":64,"height":64}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`"job_id":"([^"]+)"`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("create a job: %d %s", resp.StatusCode, b)
	}
	return m[1]
}

func template(t *testing.T) *sam.Template {
	t.Helper()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

var param = regexp.MustCompile(`\{([a-z_]+)\+?\}`)

func params(path string) []string {
	var out []string
	for _, m := range param.FindAllStringSubmatch(path, -1) {
		out = append(out, m[1])
	}
	return out
}

// fill puts values in a route's path parameters; a proxy parameter gets a
// page that does not exist.
func fill(path string, values map[string]string) string {
	return param.ReplaceAllStringFunc(path, func(m string) string {
		name := param.FindStringSubmatch(m)[1]
		if v, ok := values[name]; ok {
			return v
		}
		switch name {
		case "kind":
			return "image"
		case "vendor":
			return "vendor-b"
		case "model":
			return "model-e-4"
		}
		return "x"
	})
}

func mergeHeader(h, defaults map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range h {
		out[k] = v
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func short(v string) string {
	if len(v) > 20 {
		return fmt.Sprintf("%q… (%d bytes)", v[:20], len(v))
	}
	return fmt.Sprintf("%q", v)
}
