package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/testenv"
)

// chromium is Debian's browser, which `make test` installs where it is
// missing (CHROMIUM overrides the path).
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// browse starts a headless Chromium for the test; loopback only: no name
// resolves but 127.0.0.1.
func browse(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium()); err != nil {
		t.Fatalf("no Chromium at %s (make test installs Debian's chromium; CHROMIUM names another): %v", chromium(), err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium()), chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true), chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, stopBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { stopBrowser(); stopAlloc() })
	// The first action starts the browser, on the test's context: a step's
	// shorter one would close it when the step ends.
	if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return browser
}

// step runs a browser step, failing the test with its name.
func step(t *testing.T, browser context.Context, name string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(browser, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// assistantProcess is oauth.mjs running: its JSON lines out, lines in.
type assistantProcess struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Scanner
}

func (a *assistantProcess) read(v any) {
	a.t.Helper()
	if !a.out.Scan() {
		a.t.Fatalf("the assistant stopped: %v", a.out.Err())
	}
	if err := json.Unmarshal(a.out.Bytes(), v); err != nil {
		a.t.Fatalf("the assistant said %s: %v", a.out.Bytes(), err)
	}
}

func (a *assistantProcess) say(line string) {
	a.t.Helper()
	if _, err := io.WriteString(a.in, line+"\n"); err != nil {
		a.t.Fatal(err)
	}
}

// TestTheTypeScriptSDKConnectsBySigningIn: the protocol's own TypeScript
// SDK, as an assistant that cannot paste a token, connects to /mcp by
// OAuth: the 401's challenge leads it to the server's metadata, it
// registers (as a public client, or as client_secret_post as claude.ai's
// connector does) or presents a client ID metadata document, and its
// authorization URL opens in Chromium, where the person signs in and
// allows it. The SDK exchanges the code with its PKCE verifier, lists the
// tools, creates an image job that completes within the call, billed in
// compute units to the workspace (its USD balance unchanged), and
// refreshes its token. Once the person revokes the connection on
// /app/settings/connections, its calls are refused with 401 within the 5
// seconds /mcp keeps a connection's state (and the refresh token with
// them: the SDK asks to sign in again).
func TestTheTypeScriptSDKConnectsBySigningIn(t *testing.T) {
	node := testenv.NodePackage(t, "testdata", "@modelcontextprotocol/sdk", "the independent MCP client")
	for _, mode := range []string{"public", "secret", "document"} {
		t.Run(mode, func(t *testing.T) { connectBySigningIn(t, node, mode) })
	}
}

func connectBySigningIn(t *testing.T, node, mode string) {
	s := devstacktest.Start(t)
	ctx := context.Background()
	const email, password = "ana@example.com", "Test-Password-123!"
	idp, err := s.Local.Cognito()
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := idp.EnsureUser(ctx, email)
	if err == nil {
		err = idp.SetPassword(ctx, email, password)
	}
	if err == nil {
		err = membersdb.New(s.Store).AddMember(ctx, member.Membership{WorkspaceID: devstack.DemoWorkspace, UserID: u.UserID, Email: email, Role: member.Member, AddedAt: time.Now()})
	}
	if err != nil {
		t.Fatal(err)
	}
	acc := accountsdb.New(s.Store)
	if _, err := acc.SetPlan(ctx, devstack.DemoWorkspace, 1000, time.Now()); err != nil {
		t.Fatal(err)
	}
	usdBefore, err := acc.Balance(ctx, devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	cuBefore, _, err := acc.Units(ctx, devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}

	// The assistant's redirect URI (loopback, as a native app's), and for
	// "document" its client ID metadata document, served on loopback.
	codes := make(chan string, 1)
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/callback" {
			codes <- "http://" + r.Host + r.URL.RequestURI()
		}
		_, _ = io.WriteString(w, "You can close this window.")
	}))
	defer callback.Close()
	redirect := callback.URL + "/callback"
	var documentURL string
	if mode == "document" {
		docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"client_id": "http://" + r.Host + "/client.json", "client_name": "SDK assistant (document)",
				"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none",
				"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}})
		}))
		defer docs.Close()
		documentURL = docs.URL + "/client.json"
	}

	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "oauth.mjs", s.URL+"/mcp", redirect, mode, documentURL)
	cmd.Dir = "testdata"
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	a := &assistantProcess{t: t, in: in, out: bufio.NewScanner(out)}

	var asked struct{ Authorize, Challenge string }
	a.read(&asked)
	if want := `resource_metadata="` + s.URL + `/.well-known/oauth-protected-resource/mcp"`; !strings.Contains(asked.Challenge, want) {
		t.Errorf("the first 401's challenge %q; want %s", asked.Challenge, want)
	}
	if !strings.HasPrefix(asked.Authorize, s.URL+"/app/oauth/authorize?") {
		t.Fatalf("the authorization URL %q; want the console's /app/oauth/authorize", asked.Authorize)
	}

	browser := browse(t)
	step(t, browser, "open the authorization URL and sign in",
		chromedp.Navigate(asked.Authorize),
		chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`#consent-allow`)),
	)
	textCtx, cancelText := context.WithTimeout(browser, 20*time.Second)
	client, err := chromedp.Run(textCtx, chromedp.Text(chromedp.CSS(`#consent-client`)))
	cancelText()
	if err != nil {
		t.Fatalf("read the consent page: %v", err)
	}
	if strings.TrimSpace(client) != "SDK assistant ("+mode+")" {
		t.Errorf("the consent page names %q; want the client's name", client)
	}
	step(t, browser, "allow", chromedp.Click(chromedp.CSS(`#consent-allow`)))
	select {
	case back := <-codes:
		a.say(back)
	case <-time.After(20 * time.Second):
		t.Fatal("the browser did not come back to the redirect URI")
	}

	var used struct {
		Tools        []string
		Job          record
		IsError      bool
		Refreshed    bool
		AfterRefresh string
		Client       struct {
			ID     string
			Secret bool
		}
	}
	a.read(&used)
	if len(used.Tools) != 14 || !slices.Contains(used.Tools, imageTool) {
		t.Errorf("tools %v; want the 14", used.Tools)
	}
	if used.IsError || used.Job.Status != "completed" {
		t.Fatalf("the job: %+v (isError %v); want completed within the call", used.Job, used.IsError)
	}
	if !used.Refreshed || used.AfterRefresh != "completed" {
		t.Errorf("refresh: a new access token %v, get_job with it %q; want both", used.Refreshed, used.AfterRefresh)
	}
	switch {
	case mode == "document" && used.Client.ID != documentURL,
		mode == "secret" && !used.Client.Secret,
		mode == "public" && (used.Client.Secret || !strings.HasPrefix(used.Client.ID, "oc_")):
		t.Errorf("%s client: %+v", mode, used.Client)
	}
	usdAfter, err := acc.Balance(ctx, devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	cuAfter, _, err := acc.Units(ctx, devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if usdAfter != usdBefore || cuAfter.Available >= cuBefore.Available {
		t.Errorf("balances: USD %+v -> %+v, CU %+v -> %+v; want USD unchanged and CU spent", usdBefore, usdAfter, cuBefore, cuAfter)
	}

	// Revoked on the connections page, in the same browser.
	step(t, browser, "revoke on the connections page",
		chromedp.Navigate(s.URL+"/app/settings/connections"),
		chromedp.WaitVisible(chromedp.CSS(`#my-connections button`)),
		chromedp.Click(chromedp.CSS(`#my-connections button`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	a.say("revoked")
	var after struct {
		Refused     bool
		AfterMs     int
		Reauthorize bool
		Error       string
	}
	a.read(&after)
	if !after.Refused || after.AfterMs > 5000+1000 {
		t.Errorf("after revocation: refused %v after %d ms (%s); want a 401 within the 5 s /mcp keeps a connection's state", after.Refused, after.AfterMs, after.Error)
	}
	t.Logf("refused %d ms after the revocation", after.AfterMs)
	if !after.Reauthorize {
		t.Errorf("after revocation the SDK did not ask to sign in again (its refresh token should be refused too): %s", after.Error)
	}
}
