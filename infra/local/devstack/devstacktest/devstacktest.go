// Package devstacktest serves the whole local stack to a test: the API
// behind the API Gateway stand-in on a loopback port, with the template's
// queue mappings, stream and schedule running, on a fresh table, queues and
// buckets of the test's emulators (internal/testenv). It lets tests of code
// outside the stack, such as the client package and genjobs, talk to the
// real thing.
package devstacktest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/checkout/stripedouble"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/apigw"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

// Stack is a served local stack.
type Stack struct {
	URL   string // the API's base URL, http://127.0.0.1:PORT (also its base_url)
	Token string // the demo workspace's token (25 USD)
	Store *store.Store
	Local *devstack.Stack
	// Stripe is the console's Stripe test double, served on its own port.
	Stripe *stripedouble.Double
}

// Start serves a stack until the test ends; configure may change the stack
// before it is provisioned (as Provision's). The package's tests must run
// under testenv.Main.
func Start(t testing.TB, configure ...func(*devstack.Stack)) *Stack {
	t.Helper()
	ctx := context.Background()
	ln := Listen(t)
	baseURL := "http://" + ln.Addr().String()
	local := devstack.New(testenv.DynamoDB(t), testenv.SQS(t), testenv.S3(t), baseURL)
	tpl := Provision(t, local, configure...)
	st := store.New(local.DynamoDB, local.Table)
	token, err := devstack.SeedDemo(ctx, st, filepath.Join(t.TempDir(), "demo-token"))
	if err != nil {
		t.Fatal(err)
	}
	stripeLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stripeCtx, stopStripe := context.WithCancel(ctx)
	t.Cleanup(stopStripe)
	double := local.ServeStripe(stripeCtx, stripeLn, baseURL)
	Serve(t, ln, local, tpl, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	return &Stack{URL: baseURL, Token: token, Store: st, Local: local, Stripe: double}
}

// Provision gives local a fresh table, queues and buckets on the test's
// emulators (internal/testenv) and moto, lets configure change it, then
// creates them and the template's other queues. It returns template.yaml.
func Provision(t testing.TB, local *devstack.Stack, configure ...func(*devstack.Stack)) *sam.Template {
	t.Helper()
	local.Table, local.JobsQueue = testenv.UniqueName(t, "tbl"), testenv.UniqueName(t, "jobs")
	local.DeliveriesQueue = testenv.UniqueName(t, "dlv")
	local.UseMoto(testenv.MotoEndpoint())
	local.ResultsBucket, local.AssetsBucket = testenv.NewBucket(t), testenv.NewBucket(t)
	for _, c := range configure {
		c(local)
	}
	ctx := context.Background()
	if err := local.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := local.ProvisionQueues(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// Serve serves the functions local builds from tpl to a test until it
// ends: the API behind API Gateway's stand-in on ln, and the template's
// queue mappings, stream and schedule played, polled and run every second.
func Serve(t testing.TB, ln net.Listener, local *devstack.Stack, tpl *sam.Template, log *slog.Logger) {
	t.Helper()
	hs, err := local.Functions(tpl, log)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := apigw.New(tpl.Routes(), triggers.HTTP(tpl, hs), log)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	runCtx, stop := context.WithCancel(context.Background())
	o := local.TriggerOptions()
	o.PollWait, o.ScheduleEvery, o.Log = time.Second, time.Second, log
	runner, err := triggers.Start(runCtx, tpl, hs, o)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); runner.Wait() })
}

// Listen is a listener on a free loopback port, closed when the test ends.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// Workspace makes another workspace with API access, the given balance and
// limits (non-terminal jobs, and jobs past backlogged), and returns a token
// of it.
func (s *Stack) Workspace(t testing.TB, id string, balance billing.Micros, maxConcurrent, maxRunning int) string {
	t.Helper()
	return Workspace(t, s.Store, id, balance, maxConcurrent, maxRunning)
}

// Workspace makes workspace id in st, as Stack.Workspace does.
func Workspace(t testing.TB, st *store.Store, id string, balance billing.Micros, maxConcurrent, maxRunning int) string {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	if err := accountsdb.New(st).CreateWorkspace(ctx, auth.Workspace{ID: id, Name: id, APIEnabled: true,
		MaxConcurrent: maxConcurrent, MaxRunning: maxRunning, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if balance > 0 {
		if _, err := accountsdb.New(st).TopUp(ctx, id, "pay_"+id, balance, now); err != nil {
			t.Fatal(err)
		}
	}
	token, hash := auth.NewToken()
	if err := tokensdb.New(st).CreateToken(ctx, auth.Token{ID: auth.NewID("tok_"), WorkspaceID: id, Name: "test", Hash: hash, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	return token
}

// USD is one dollar in micro-USD.
const USD = billing.USD
