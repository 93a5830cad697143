package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"genjobs/infra/local/endpoints"
	"genjobs/internal/emulator"
)

// A person an owner adds in the console is still there after make run
// restarts (moto's Cognito keeps nothing across runs): the second run
// prints their email with a temporary password, which signs them in to
// the set-password step and then to their workspace.
func TestAMemberAddedBeforeARestartOfMakeRunCanSignIn(t *testing.T) {
	state := t.TempDir()
	rec, stop, _ := makeRun(t, state)
	owner := consoleBrowser(t, rec.API)
	var demo struct{ Email, Password string }
	b, _ := os.ReadFile(filepath.Join(state, "demo-owner.json"))
	if err := json.Unmarshal(b, &demo); err != nil {
		t.Fatal(err)
	}
	owner.post(t, "/app/sign-in", url.Values{"email": {demo.Email}, "password": {demo.Password}}, http.StatusSeeOther)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(owner.get(t, "/app/settings/members"))
	if csrf == nil {
		t.Fatal("no CSRF token on the members page")
	}
	owner.post(t, "/app/settings/members", url.Values{"csrf": {csrf[1]}, "workspace": {"ws_demo"}, "email": {"ana@example.com"}, "role": {"admin"}}, 0)
	stop()

	rec, stop, out := makeRun(t, state)
	defer stop()
	line := regexp.MustCompile(`(?m)^\s+ana@example\.com\s+(\S+)$`).FindStringSubmatch(out())
	if line == nil {
		t.Fatalf("the second make run does not print ana@example.com with a password:\n%s", out())
	}
	ana := consoleBrowser(t, rec.API)
	page := ana.post(t, "/app/sign-in", url.Values{"email": {"ana@example.com"}, "password": {line[1]}}, http.StatusOK)
	challenge := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(page)
	if challenge == nil {
		t.Fatalf("the printed password does not lead to the set-password step:\n%s", page)
	}
	const pw = "Ana-Own-Password-1!"
	ana.post(t, "/app/set-password", url.Values{"email": {"ana@example.com"}, "challenge": {challenge[1]}, "password": {pw}, "password_again": {pw}}, http.StatusSeeOther)
	if tokens := ana.get(t, "/app/settings/api-tokens"); !strings.Contains(tokens, `id="create-token"`) {
		t.Fatalf("Ana, an admin of ws_demo, does not see the token form:\n%s", tokens)
	}
}

// makeRun starts make run on free ports with its data in state, waits for
// its endpoints record, and returns it, a stop (SIGTERM, then wait) and
// the output so far.
func makeRun(t *testing.T, state string) (endpoints.Stack, func(), func() string) {
	t.Helper()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "-C", root, "run", "RUN_FLAGS=-state "+state)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(freePort(t)), "DYNAMODB_PORT="+strconv.Itoa(freePort(t)),
		"FAUXQS_PORT="+strconv.Itoa(freePort(t)), "MOTO_PORT="+strconv.Itoa(freePort(t)), "STRIPE_PORT="+strconv.Itoa(freePort(t)))
	var out output
	cmd.Stdout, cmd.Stderr = &out, &logTail{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(3 * time.Minute)
	var rec endpoints.Stack
	for {
		if rec, err = endpoints.Find(state); err == nil && strings.Contains(out.String(), "Ctrl-C stops everything.") {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("make run exited before serving: %v\n%s\n%s", err, out.String(), cmd.Stderr)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not start\n%s", cmd.Stderr)
		}
	}
	stop := func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatal("make did not exit within 30 s of SIGTERM")
		}
	}
	return rec, stop, out.String
}

type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// browserOf is a cookie jar on the console that does not follow redirects
// and sends forms from the console's origin.
type browserOf struct {
	base   string
	client *http.Client
}

func consoleBrowser(t *testing.T, base string) *browserOf {
	jar, _ := cookiejar.New(nil)
	return &browserOf{base: base, client: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browserOf) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := b.client.Get(b.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// post sends a form; want 0 takes any status under 400.
func (b *browserOf) post(t *testing.T, path string, form url.Values, want int) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if (want != 0 && resp.StatusCode != want) || (want == 0 && resp.StatusCode >= 400) {
		t.Fatalf("POST %s: %d, want %d\n%s", path, resp.StatusCode, want, body)
	}
	return string(body)
}
