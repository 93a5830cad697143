package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/internal/authserver"
	"genjobs/internal/clock"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/oauthdb"
)

// MCP over OAuth (oauthmcp.go): the same MCP tool call with an OAuth access
// token and with an API token, interleaved in one run through the local
// API (the access token verified in the function, its grant and membership
// read through the authentication cache as API tokens are), and the token
// endpoint's exchanges and refreshes, KMS (moto) signing each access token.
const (
	oauthWorkspace = "ws_bench_oauth"
	oauthPerson    = "usr_bench_oauth"
	oauthEmail     = "bench-oauth@example.com"
	oauthCalls     = 300 // of each kind, after oauthWarmup of each
	oauthWarmup    = 30
	oauthTokens    = 100 // code exchanges, and as many refreshes
	// maxOAuthRatio bounds the OAuth call's p50 against the API token's.
	maxOAuthRatio = 1.2
	// maxTokenP50 bounds the token endpoint's p50.
	maxTokenP50 = 50 * time.Millisecond
)

type oauthReport struct {
	loadAvg            string
	apiCall, oauthCall loadStats // get_job
	exchange, refresh  loadStats // POST /oauth/token
}

// runOAuthMCP is `go run ./infra/bench oauth`: these rows alone.
func runOAuthMCP(ctx context.Context, root string) error {
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	before := loadAverage()
	var rep *oauthReport
	err = withStack(ctx, root, "bench-oauth-", func(local *devstack.Stack) error {
		rep, err = measureOAuthMCP(ctx, tpl, local)
		return err
	})
	if err != nil {
		return err
	}
	r := &report{t: newReportTable(), host: runtime.GOOS + "/" + runtime.GOARCH}
	r.oauthMCP(rep)
	r.t.note("load average (1 min): %s before, %s after.", before, loadAverage())
	r.t.print(os.Stdout)
	if r.failed {
		return fmt.Errorf("some checks failed (see the table)")
	}
	return nil
}

func measureOAuthMCP(ctx context.Context, tpl *sam.Template, local *devstack.Stack) (*oauthReport, error) {
	local.Table, local.JobsQueue = "genjobs-bench-oauth", "genjobs-bench-oauth-jobs"
	local.ResultsBucket, local.AssetsBucket = "genjobs-bench-oauth-results", "genjobs-bench-oauth-assets"
	st := store.New(local.DynamoDB, local.Table)
	served, apiToken, err := serveBench(ctx, tpl, local, st, oauthWorkspace, loadLimit)
	if err != nil {
		return nil, err
	}
	defer served.close()
	now := time.Now()
	if _, err := accountsdb.New(st).SetPlan(ctx, oauthWorkspace, 100_000_000, now); err != nil {
		return nil, err
	}
	if err := membersdb.New(st).AddMember(ctx, member.Membership{WorkspaceID: oauthWorkspace, UserID: oauthPerson,
		Email: oauthEmail, Role: member.Member, AddedAt: now}); err != nil {
		return nil, err
	}
	c := &oauthBench{client: &http.Client{Timeout: startTimeout}, base: served.url,
		consent: &authserver.Server{Store: oauthdb.New(st), Clock: clock.System{}}}
	if err := c.register(ctx); err != nil {
		return nil, err
	}
	rep := &oauthReport{}

	fmt.Fprintf(os.Stderr, "bench: the token endpoint, %d code exchanges and %d refreshes...\n", oauthTokens, oauthTokens)
	codes := make([]string, oauthTokens+1)
	for i := range codes {
		if codes[i], err = c.code(ctx); err != nil {
			return nil, err
		}
	}
	access, refresh, err := c.exchange(ctx, codes[0])
	if err != nil {
		return nil, fmt.Errorf("the first code exchange: %w", err)
	}
	i := 0
	rep.exchange = drive(ctx, 1, oauthTokens, time.Minute, func(ctx context.Context) error {
		i++
		_, _, err := c.exchange(ctx, codes[i])
		return err
	})
	rep.refresh = drive(ctx, 1, oauthTokens, time.Minute, func(ctx context.Context) error {
		var err error
		access, refresh, err = c.refresh(ctx, refresh)
		return err
	})

	// One job of the workspace, which both calls read.
	created, err := c.mcp(ctx, "Bearer "+apiToken, "generate_image_model_e_4", map[string]any{"prompt": "a cat", "width": 64, "height": 64})
	if err != nil {
		return nil, err
	}
	var rec struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(created, &rec); err != nil || rec.JobID == "" {
		return nil, fmt.Errorf("the job to read: %s", created)
	}
	args := map[string]any{"job_id": rec.JobID}
	fmt.Fprintf(os.Stderr, "bench: get_job through /mcp, an API token and an access token interleaved, %d each...\n", oauthCalls)
	for range oauthWarmup {
		for _, bearer := range []string{apiToken, access} {
			if _, err := c.mcp(ctx, "Bearer "+bearer, "get_job", args); err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	rep.loadAvg = loadAverage()
	rep.apiCall, rep.oauthCall = interleave(ctx, oauthCalls,
		func(ctx context.Context) error { _, err := c.mcp(ctx, "Bearer "+apiToken, "get_job", args); return err },
		func(ctx context.Context) error { _, err := c.mcp(ctx, "Bearer "+access, "get_job", args); return err })
	return rep, ctx.Err()
}

// interleave calls a and b n times each, alternately, a first on even
// rounds and b first on odd ones, so that both meet the same machine.
func interleave(ctx context.Context, n int, a, b func(context.Context) error) (sa, sb loadStats) {
	one := func(s *loadStats, f func(context.Context) error) {
		t0 := time.Now()
		err := f(ctx)
		d := time.Since(t0)
		s.elapsed += d
		if err != nil {
			s.errs = append(s.errs, err.Error())
			return
		}
		s.lat = append(s.lat, d)
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if i%2 == 0 {
			one(&sa, a)
			one(&sb, b)
		} else {
			one(&sb, b)
			one(&sa, a)
		}
	}
	return sa, sb
}

// oauthBench is a client of the authorization server and of /mcp.
type oauthBench struct {
	client   *http.Client
	base     string // the local API: /mcp and the oauth function's routes
	consent  *authserver.Server
	clientID string
}

const (
	benchRedirect = "http://127.0.0.1:9/callback"
	benchVerifier = "bench-verifier-bench-verifier-bench-verifier"
)

func (c *oauthBench) post(ctx context.Context, u, contentType, body, authz string, want int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	if authz != "" {
		req.Header.Set("Authorization", authz)
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	res, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != want {
		return nil, fmt.Errorf("%d %s", res.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

func (c *oauthBench) register(ctx context.Context) error {
	b, err := c.post(ctx, c.base+"/oauth/register", "application/json",
		`{"client_name":"bench","redirect_uris":["`+benchRedirect+`"]}`, "", http.StatusCreated)
	if err != nil {
		return fmt.Errorf("registration: %w", err)
	}
	var out struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return err
	}
	c.clientID = out.ClientID
	return nil
}

// code approves an authorization request as the consent page does and
// returns its code.
func (c *oauthBench) code(ctx context.Context) (string, error) {
	sum := sha256.Sum256([]byte(benchVerifier))
	req, err := c.consent.ParseAuthorize(ctx, c.base, url.Values{
		"response_type": {"code"}, "client_id": {c.clientID}, "redirect_uri": {benchRedirect},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {c.base + "/mcp"}, "state": {"s"},
	})
	if err != nil {
		return "", fmt.Errorf("authorize: %w", err)
	}
	loc, err := c.consent.Approve(ctx, req, oauthPerson, oauthWorkspace)
	if err != nil {
		return "", fmt.Errorf("approve: %w", err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", err
	}
	return u.Query().Get("code"), nil
}

func (c *oauthBench) tokens(ctx context.Context, form url.Values) (access, refresh string, err error) {
	form.Set("client_id", c.clientID)
	b, err := c.post(ctx, c.base+"/oauth/token", "application/x-www-form-urlencoded", form.Encode(), "", http.StatusOK)
	if err != nil {
		return "", "", err
	}
	var out struct {
		Access  string `json:"access_token"`
		Refresh string `json:"refresh_token"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Access == "" || out.Refresh == "" {
		return "", "", fmt.Errorf("the token answer: %s", b)
	}
	return out.Access, out.Refresh, nil
}

func (c *oauthBench) exchange(ctx context.Context, code string) (string, string, error) {
	return c.tokens(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {benchRedirect},
		"code_verifier": {benchVerifier}, "resource": {c.base + "/mcp"}})
}

func (c *oauthBench) refresh(ctx context.Context, token string) (string, string, error) {
	return c.tokens(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}})
}

// mcp calls tool through /mcp and returns its structured content; a tool
// error is an error.
func (c *oauthBench) mcp(ctx context.Context, authz, tool string, args map[string]any) (json.RawMessage, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		return nil, err
	}
	b, err := c.post(ctx, c.base+"/mcp", "application/json", string(body), authz, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var rpc struct {
		Result *struct {
			IsError    bool            `json:"isError"`
			Structured json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &rpc); err != nil || rpc.Result == nil || rpc.Result.IsError {
		return nil, fmt.Errorf("%s: %s", tool, b)
	}
	return rpc.Result.Structured, nil
}

func (r *report) oauthMCP(s *oauthReport) {
	row := func(measure, subject string, st loadStats, note string) {
		if len(st.errs) > 0 {
			note = r.fail("%d of %d failed: %s", len(st.errs), len(st.lat)+len(st.errs), failureSummary(st.errs))
		}
		r.t.add(measure, subject, fmt.Sprint(len(st.lat)), fmt.Sprintf("%.0f req/s", st.rate()),
			ms(percentile(st.lat, 50)), ms(percentile(st.lat, 99)), note)
	}
	api, oauth := percentile(s.apiCall.lat, 50), percentile(s.oauthCall.lat, 50)
	ratio := 0.0
	if api > 0 {
		ratio = float64(oauth) / float64(api)
	}
	note := fmt.Sprintf("p50 %.2fx the API token's (at most %.1fx)", ratio, maxOAuthRatio)
	if ratio > maxOAuthRatio || api == 0 {
		note = r.fail("%s", note)
	}
	row("MCP tool call, local API", "get_job, API token", s.apiCall, "interleaved with the row below")
	row("MCP tool call, local API", "get_job, OAuth access token", s.oauthCall, note)
	for _, t := range []struct {
		subject string
		st      loadStats
	}{{"POST /oauth/token, code", s.exchange}, {"POST /oauth/token, refresh", s.refresh}} {
		note := fmt.Sprintf("p50 under %s; KMS Sign on moto", ms(maxTokenP50))
		if p50 := percentile(t.st.lat, 50); p50 >= maxTokenP50 || len(t.st.lat) == 0 {
			note = r.fail("p50 %s, over %s", ms(p50), ms(maxTokenP50))
		}
		row("token endpoint, local API", t.subject, t.st, note)
	}
	r.t.note("MCP over OAuth: own table; one client, one request at a time; %d warm-up calls of each kind first;", oauthWarmup)
	r.t.note("  the consent step called in process, as the console's page calls it; 1-minute load average %s before the calls.", s.loadAvg)
}
