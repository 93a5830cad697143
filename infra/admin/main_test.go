package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/endpoints"
	"genjobs/internal/auth"
	"genjobs/internal/clock"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is a fresh table on the tests' DynamoDB Local.
type env struct {
	db    *dynamodb.Client
	table string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{db: testenv.DynamoDB(t), table: testenv.UniqueName(t, "admin")}
	if err := schema.CreateTable(context.Background(), e.db, e.table); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) store() *store.Store { return store.New(e.db, e.table) }

// addToWorkspace changes a number on the workspace's item behind the
// store's back, as a bug or a hand edit would.
func (e *env) addToWorkspace(t *testing.T, ws, attribute string, n int) {
	t.Helper()
	_, err := e.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "WS#" + ws}, "SK": &types.AttributeValueMemberS{Value: "WS"},
		},
		UpdateExpression:          aws.String("ADD #a :n"),
		ExpressionAttributeNames:  map[string]string{"#a": attribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(n)}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// result is one invocation's outcome.
type result struct {
	stdout, stderr string
	code           int
}

// run invokes the CLI in-process on the env's table, as main would.
func (e *env) run(args ...string) result {
	c := &cli{
		clock:  clock.System{},
		getenv: func(string) string { return "" },
		target: &target{db: e.db, table: e.table, where: "in the test"},
	}
	return invoke(c, args...)
}

func invoke(c *cli, args ...string) result {
	var out, errb bytes.Buffer
	code := c.run(context.Background(), args, &out, &errb)
	return result{out.String(), errb.String(), code}
}

// ok asserts success with exactly one JSON object on stdout, nothing on
// stderr, and returns the object.
func (e *env) ok(t *testing.T, args ...string) map[string]any {
	t.Helper()
	return wantOK(t, e.run(args...), args)
}

func wantOK(t *testing.T, r result, args []string) map[string]any {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%q: exit %d, stderr %q; want 0 and nothing", args, r.code, r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 1 || !strings.HasSuffix(r.stdout, "\n") {
		t.Fatalf("%q: stdout %q; want one line", args, r.stdout)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
		t.Fatalf("%q: stdout %q is not one JSON object: %v", args, r.stdout, err)
	}
	return obj
}

// wantFail asserts exit code code, nothing on stdout, one line on stderr
// containing want.
func wantFail(t *testing.T, r result, code int, want string, args []string) {
	t.Helper()
	if r.code != code || r.stdout != "" {
		t.Errorf("%q: exit %d, stdout %q; want %d and nothing", args, r.code, r.stdout, code)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") || !strings.HasPrefix(r.stderr, "admin: ") {
		t.Errorf("%q: stderr %q; want one line starting admin:", args, r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("%q: stderr %q; want it to say %q", args, r.stderr, want)
	}
}

func (e *env) fails(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	wantFail(t, e.run(args...), code, want, args)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func wantKeys(t *testing.T, m map[string]any, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := keys(m); !slices.Equal(got, want) {
		t.Fatalf("output %v has keys %v; want exactly %v", m, got, want)
	}
}

func TestTokenLifecycle(t *testing.T) {
	e, ctx := newEnv(t), context.Background()
	authn := auth.Authenticator{Dir: tokensdb.Directory(e.store())}

	out := e.ok(t, "workspace", "create", "--name", "Acme")
	wantKeys(t, out, "workspace_id")
	ws := out["workspace_id"].(string)
	if !strings.HasPrefix(ws, "ws_") {
		t.Fatalf("workspace id %q; want ws_...", ws)
	}
	w, err := accountsdb.New(e.store()).Workspace(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "Acme" || w.APIEnabled || w.MaxConcurrent != 20 || w.MaxRunning != 5 {
		t.Errorf("stored workspace %+v; want Acme, API disabled, limits 20/5", w)
	}

	out = e.ok(t, "token", "create", "--workspace", ws, "--name", "ci")
	wantKeys(t, out, "token_id", "token")
	tokenID, token := out["token_id"].(string), out["token"].(string)
	if !strings.HasPrefix(tokenID, "tok_") || !strings.HasPrefix(token, auth.TokenPrefix) {
		t.Fatalf("token %q id %q; want gjs_... and tok_...", token, tokenID)
	}
	// API access starts disabled: the token is refused until enabled.
	if _, err := authn.Authenticate(ctx, "Bearer "+token); !errors.Is(err, auth.ErrAPIDisabled) {
		t.Fatalf("before enable-api: %v; want ErrAPIDisabled", err)
	}

	out = e.ok(t, "workspace", "enable-api", "--workspace", ws)
	if !reflect.DeepEqual(out, map[string]any{"workspace_id": ws, "api_enabled": true}) {
		t.Errorf("enable-api printed %v", out)
	}
	p, err := authn.Authenticate(ctx, "Bearer "+token)
	if err != nil || p.WorkspaceID != ws || p.TokenID != tokenID {
		t.Fatalf("after enable-api: %+v, %v; want workspace %s token %s", p, err, ws, tokenID)
	}

	out = e.ok(t, "token", "revoke", "--workspace", ws, "--token-id", tokenID)
	if !reflect.DeepEqual(out, map[string]any{"token_id": tokenID, "revoked": true}) {
		t.Errorf("revoke printed %v", out)
	}
	if _, err := authn.Authenticate(ctx, "Bearer "+token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("right after revoke: %v; want ErrUnauthenticated", err)
	}
	// Revoking again is not an error: the operator's intent holds.
	e.ok(t, "token", "revoke", "--workspace", ws, "--token-id", tokenID)

	other := e.ok(t, "token", "create", "--workspace", ws, "--name", "second")["token"].(string)
	if _, err := authn.Authenticate(ctx, "Bearer "+other); err != nil {
		t.Fatalf("second token: %v", err)
	}
	out = e.ok(t, "workspace", "disable-api", "--workspace", ws)
	if !reflect.DeepEqual(out, map[string]any{"workspace_id": ws, "api_enabled": false}) {
		t.Errorf("disable-api printed %v", out)
	}
	if _, err := authn.Authenticate(ctx, "Bearer "+other); !errors.Is(err, auth.ErrAPIDisabled) {
		t.Errorf("after disable-api: %v; want ErrAPIDisabled", err)
	}
}

func TestWorkspaceLimits(t *testing.T) {
	e, ctx := newEnv(t), context.Background()
	ws := e.ok(t, "workspace", "create", "--name", "  Big  ", "--max-concurrent", "50", "--max-running", "50")["workspace_id"].(string)
	w, err := accountsdb.New(e.store()).Workspace(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "Big" || w.MaxConcurrent != 50 || w.MaxRunning != 50 {
		t.Errorf("stored %+v; want name Big (trimmed), limits 50/50", w)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-concurrent", "0"}, "--max-concurrent must be a positive integer, not 0"},
		{[]string{"--max-running", "-1"}, "--max-running must be a positive integer, not -1"},
		{[]string{"--max-concurrent", "3"}, "--max-running (5) must not exceed --max-concurrent (3)"},
		{[]string{"--max-concurrent", "ten"}, `invalid value "ten" for flag -max-concurrent`},
	} {
		e.fails(t, 2, tc.want, append([]string{"workspace", "create", "--name", "x"}, tc.args...)...)
	}
}

func TestTopUp(t *testing.T) {
	e := newEnv(t)
	ws := e.ok(t, "workspace", "create", "--name", "Acme")["workspace_id"].(string)
	const after25 = `{"available_usd":"25.000000","reserved_usd":"0.000000","spent_usd":"0.000000"}` + "\n"

	for range 2 {
		if r := e.run("balance", "topup", "--workspace", ws, "--usd", "25", "--payment-id", "pay_1"); r.code != 0 || r.stdout != after25 {
			t.Fatalf("topup: exit %d stdout %q stderr %q; want %q", r.code, r.stdout, r.stderr, after25)
		}
	}
	if r := e.run("balance", "show", "--workspace", ws); r.code != 0 || r.stdout != after25 || r.stderr != "" {
		t.Fatalf("show after two topups with one payment id: %+v; want %q", r, after25)
	}
	e.fails(t, 1, "payment id pay_1 was already used with another amount",
		"balance", "topup", "--workspace", ws, "--usd", "30", "--payment-id", "pay_1")
	if r := e.run("balance", "show", "--workspace", ws); r.stdout != after25 {
		t.Fatalf("show after a refused reuse: %q; want %q", r.stdout, after25)
	}
	out := e.ok(t, "balance", "topup", "--workspace", ws, "--usd", "10.000001", "--payment-id", "pay_2")
	if out["available_usd"] != "35.000001" {
		t.Errorf("after a second payment: %v; want available 35.000001", out)
	}
}

func TestTopUpBounds(t *testing.T) {
	e := newEnv(t)
	ws := e.ok(t, "workspace", "create", "--name", "Acme")["workspace_id"].(string)
	for _, tc := range []struct{ usd, want string }{
		{"4.99", "--usd must be between 5 and 10000 USD, not 4.99"},
		{"10000.01", "--usd must be between 5 and 10000 USD, not 10000.01"},
		{"0", "between 5 and 10000"},
		{"-20", "between 5 and 10000"},
		{"1e3", "not a dollar amount"},
		{"5.0000001", "at most six decimals"},
		{"", "--usd is required"},
	} {
		e.fails(t, 2, tc.want, "balance", "topup", "--workspace", ws, "--usd", tc.usd, "--payment-id", "pay_x")
	}
	const zero = `{"available_usd":"0.000000","reserved_usd":"0.000000","spent_usd":"0.000000"}` + "\n"
	if r := e.run("balance", "show", "--workspace", ws); r.stdout != zero {
		t.Fatalf("after refused topups: %q; want %q", r.stdout, zero)
	}
	// Nothing was recorded under pay_x either: it is still free to use.
	e.ok(t, "balance", "topup", "--workspace", ws, "--usd", "5", "--payment-id", "pay_x")
	out := e.ok(t, "balance", "topup", "--workspace", ws, "--usd", "10000.000000", "--payment-id", "pay_y")
	if out["available_usd"] != "10005.000000" {
		t.Errorf("after topups at both bounds: %v; want 10005.000000", out)
	}
}

func TestBadArguments(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"workspace"}, "workspace: missing subcommand"},
		{[]string{"workspace", "--name", "x"}, "workspace: missing subcommand"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"workspace", "invoice", "--workspace", "w"}, "workspace invoice: --credit-limit-usd is required"},
		{[]string{"workspace", "invoice", "--workspace", "w", "--credit-limit-usd", "1000000.5"}, "must be between 0 and 1000000 USD"},
		{[]string{"workspace", "invoice", "--workspace", "w", "--credit-limit-usd", "-1"}, "must be between 0 and 1000000 USD"},
		{[]string{"workspace", "invoice", "--workspace", "w", "--credit-limit-usd", "ten"}, "not a dollar amount"},
		{[]string{"ledger", "verify"}, "ledger verify: give --workspace W or --all"},
		{[]string{"ledger", "verify", "--workspace", "w", "--all"}, "ledger verify: give --workspace W or --all"},
		{[]string{"style", "create"}, "style create: give --workspace W"},
		{[]string{"--bogus", "workspace", "create"}, "flag provided but not defined: -bogus"},
		{[]string{"workspace", "create"}, "workspace create: --name is required"},
		{[]string{"workspace", "create", "--name", "   "}, "workspace create: --name is required"},
		{[]string{"workspace", "create", "--name", strings.Repeat("x", 101)}, "--name has 101 characters; at most 100"},
		{[]string{"workspace", "create", "--name", "a\tb"}, "--name must be printable text"},
		{[]string{"workspace", "create", "Acme"}, `unexpected argument "Acme"`},
		{[]string{"workspace", "create", "--name", "x", "--colour", "red"}, "flag provided but not defined: -colour"},
		{[]string{"workspace", "create", "--name"}, "flag needs an argument: -name"},
		{[]string{"workspace", "enable-api"}, "workspace enable-api: --workspace is required"},
		{[]string{"workspace", "disable-api", "--workspace", "ws 1"}, "has spaces or control characters"},
		{[]string{"token", "create", "--workspace", "ws_1"}, "token create: --name is required"},
		{[]string{"token", "create", "--name", "ci"}, "token create: --workspace is required"},
		{[]string{"token", "revoke", "--workspace", "ws_1"}, "token revoke: --token-id is required"},
		{[]string{"balance", "topup", "--workspace", "ws_1", "--usd", "5"}, "balance topup: --payment-id is required"},
		{[]string{"balance", "topup", "--workspace", "ws_1", "--usd", "5", "--payment-id", strings.Repeat("p", 256)}, "at most 255"},
		{[]string{"balance", "show"}, "balance show: --workspace is required"},
	} {
		e.fails(t, 2, tc.want, tc.args...)
	}
}

func TestUnknownItems(t *testing.T) {
	e := newEnv(t)
	ws := e.ok(t, "workspace", "create", "--name", "Acme")["workspace_id"].(string)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"workspace", "enable-api", "--workspace", "ws_nope"}, "workspace ws_nope does not exist"},
		{[]string{"workspace", "disable-api", "--workspace", "ws_nope"}, "workspace ws_nope does not exist"},
		{[]string{"token", "create", "--workspace", "ws_nope", "--name", "ci"}, "workspace ws_nope does not exist"},
		{[]string{"token", "revoke", "--workspace", ws, "--token-id", "tok_nope"}, "token tok_nope not found in workspace " + ws},
		{[]string{"balance", "topup", "--workspace", "ws_nope", "--usd", "5", "--payment-id", "p"}, "workspace ws_nope does not exist"},
		{[]string{"balance", "show", "--workspace", "ws_nope"}, "workspace ws_nope does not exist"},
	} {
		e.fails(t, 1, tc.want, tc.args...)
	}
}

func TestHelp(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		r := e.run(args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("%q: exit %d stderr %q", args, r.code, r.stderr)
		}
		for _, cmd := range commands {
			if !strings.Contains(r.stdout, cmd.name+" ") {
				t.Errorf("%q does not list %q", args, cmd.name)
			}
		}
	}
	if r := e.run("token", "--help"); r.code != 0 || !strings.Contains(r.stdout, "token revoke") || strings.Contains(r.stdout, "balance topup") {
		t.Errorf("token --help: %+v; want the token commands only", r)
	}
	for _, cmd := range commands {
		args := append(strings.Fields(cmd.name), "--help")
		r := e.run(args...)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: go run ./infra/admin "+cmd.name+" "+cmd.synopsis+"\n") ||
			!strings.Contains(r.stdout, "--aws") {
			t.Errorf("%q: %+v; want its usage on stdout", args, r)
		}
	}
}

// localCLI is a CLI with no target set: it resolves one from the flags and
// an environment where DYNAMODB_PORT is the tests' DynamoDB Local.
func localCLI(t *testing.T, env map[string]string) *cli {
	u, err := url.Parse(testenv.DynamoDBEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	return &cli{clock: clock.System{}, getenv: func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "DYNAMODB_PORT" {
			return u.Port()
		}
		return ""
	}}
}

func TestLocalByDefault(t *testing.T) {
	e := newEnv(t)
	// Credentials and an endpoint for AWS in the environment must not send
	// the CLI there: only --aws does.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("AWS_PROFILE", "production")

	// --table before the command words, then after them.
	args := []string{"--table", e.table, "workspace", "create", "--name", "Local"}
	ws := wantOK(t, invoke(localCLI(t, nil), args...), args)["workspace_id"].(string)
	args = []string{"workspace", "enable-api", "--workspace", ws, "--table", e.table}
	wantOK(t, invoke(localCLI(t, nil), args...), args)
	w, err := accountsdb.New(e.store()).Workspace(context.Background(), ws)
	if err != nil || !w.APIEnabled {
		t.Fatalf("workspace in the test table: %+v, %v; want it there, enabled", w, err)
	}

	tg, err := resolve(context.Background(), globals{}, localCLI(t, nil).getenv, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(testenv.DynamoDBEndpoint())
	if got := aws.ToString(tg.db.Options().BaseEndpoint); got != "http://127.0.0.1:"+u.Port() || tg.table != devstack.Table {
		t.Errorf("default target: endpoint %q table %q; want DynamoDB Local and %s", got, tg.table, devstack.Table)
	}
}

func TestLocalStackDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c := localCLI(t, map[string]string{"DYNAMODB_PORT": strconv.Itoa(port)})
	args := []string{"balance", "show", "--workspace", "ws_1"}
	r := invoke(c, args...)
	want := "admin: the local stack is not running on 127.0.0.1:" + strconv.Itoa(port) + "; start it with make run\n"
	if r.code != 1 || r.stderr != want || r.stdout != "" {
		t.Errorf("stack down: %+v; want exit 1 and %q", r, want)
	}
	wantFail(t, invoke(localCLI(t, map[string]string{"DYNAMODB_PORT": "eighty"}), args...), 2,
		`DYNAMODB_PORT must be a port number, not "eighty"`, args)
}

func TestLocalTableMissing(t *testing.T) {
	u, _ := url.Parse(testenv.DynamoDBEndpoint())
	for _, args := range [][]string{
		{"--table", "no-such-table", "balance", "show", "--workspace", "ws_1"},
		{"--table", "no-such-table", "balance", "topup", "--workspace", "ws_1", "--usd", "5", "--payment-id", "p"},
		{"--table", "no-such-table", "workspace", "create", "--name", "x"},
	} {
		wantFail(t, invoke(localCLI(t, nil), args...), 1,
			"table no-such-table does not exist on DynamoDB Local at 127.0.0.1:"+u.Port(), args)
	}
}

func TestAWSFlags(t *testing.T) {
	// Usage errors come before any connection.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--aws", "balance", "show", "--workspace", "w"}, "--aws needs --table NAME or --stack NAME"},
		{[]string{"balance", "show", "--workspace", "w", "--aws", "--table", "t", "--stack", "s"}, "give --table or --stack, not both"},
		{[]string{"--stack", "genjobs", "balance", "show", "--workspace", "w"}, "--stack names a deployment and needs --aws"},
	} {
		wantFail(t, invoke(localCLI(t, nil), tc.args...), 2, tc.want, tc.args)
	}

	// --aws takes the usual chain; no request is made until a command runs.
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	tg, err := resolve(context.Background(), globals{aws: true, table: "genjobs-prod-Table"}, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tg.table != "genjobs-prod-Table" || tg.local != "" || tg.where != "in AWS (eu-west-1)" || tg.db.Options().BaseEndpoint != nil {
		t.Errorf("AWS target %+v; want the table in eu-west-1 on AWS's own endpoint", tg)
	}
	t.Setenv("AWS_REGION", "")
	if _, err := resolve(context.Background(), globals{aws: true, table: "t"}, func(string) string { return "" }, nil); err == nil ||
		!strings.Contains(err.Error(), "no AWS region configured") {
		t.Errorf("AWS without a region: %v; want a clear refusal", err)
	}
}

func TestTableOutput(t *testing.T) {
	outputs := []cftypes.Output{
		{OutputKey: aws.String("ApiUrl"), OutputValue: aws.String("https://x")},
		{OutputKey: aws.String("TableName"), OutputValue: aws.String("genjobs-Table-ABC")},
	}
	if got, err := tableOutput("genjobs", outputs); err != nil || got != "genjobs-Table-ABC" {
		t.Errorf("tableOutput = %q, %v", got, err)
	}
	if _, err := tableOutput("other", outputs[:1]); err == nil || !strings.Contains(err.Error(), "stack other has no TableName output") {
		t.Errorf("without the output: %v", err)
	}
}

// With no DYNAMODB_PORT, the CLI talks to the DynamoDB Local that the
// running make run recorded, on whatever port it was started.
func TestLocalFindsTheRecordedStack(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	err := endpoints.Write(endpoints.StateDir(root), endpoints.Stack{PID: os.Getpid(), API: "http://127.0.0.1:3711",
		DynamoDB: testenv.DynamoDBEndpoint(), Fauxqs: "http://127.0.0.1:4711"})
	if err != nil {
		t.Fatal(err)
	}
	c := &cli{clock: clock.System{}, getenv: func(string) string { return "" },
		repoRoot: func() (string, error) { return root, nil }}
	args := []string{"--table", e.table, "workspace", "create", "--name", "found"}
	r := invoke(c, args...)
	if r.code != 0 || !strings.Contains(r.stdout, `"workspace_id"`) {
		t.Fatalf("%v: %+v", args, r)
	}
}
