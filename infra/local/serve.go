package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/endpoints"
	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/apigw"
	"genjobs/internal/store"
)

// ports are the local stack's ports (docs/local-stack.md, "Ports and
// addresses"), each overridable from the environment.
type ports struct{ api, dynamodb, fauxqs, moto, stripe int }

func localPorts() (ports, error) {
	var p ports
	var err error
	if p.api, err = envPort("PORT", 3000); err != nil {
		return p, err
	}
	if p.dynamodb, err = envPort("DYNAMODB_PORT", 8000); err != nil {
		return p, err
	}
	if p.fauxqs, err = envPort("FAUXQS_PORT", 4566); err != nil {
		return p, err
	}
	// Not moto's own default, 5000: that one is often taken (macOS's
	// AirPlay receiver, Flask apps).
	if p.moto, err = envPort("MOTO_PORT", 4567); err != nil {
		return p, err
	}
	// stripe-mock's port: the console's Stripe test double.
	p.stripe, err = envPort("STRIPE_PORT", 12111)
	return p, err
}

func envPort(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%s must be a port number, not %q", name, v)
	}
	return p, nil
}

// serve runs the whole stack until Ctrl-C: emulators with their data under
// .local/, the table and queues, the demo workspace, and the API.
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "log every request the functions serve")
	stateDir := fs.String("state", "", "the `directory` of the stack's data: DynamoDB's tables, the demo token, the stream positions and the logs (default <repo>/.local)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := localPorts()
	if err != nil {
		return err
	}
	apiPort := p.api
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	state := filepath.Join(root, ".local")
	if *stateDir != "" {
		if state, err = filepath.Abs(*stateDir); err != nil {
			return err
		}
	}
	// A bad secrets file is said before anything starts.
	var providerSecrets devstack.ProviderSecrets
	if path := os.Getenv(devstack.ProviderSecretsFileEnv); path != "" {
		if providerSecrets, err = devstack.ReadProviderSecrets(path); err != nil {
			return err
		}
	}
	// Take the API's port first: failing after a minute of install is worse.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(apiPort)))
	if err != nil {
		return fmt.Errorf("port %d for the API is taken (set PORT to use another): %w", apiPort, err)
	}
	defer ln.Close()
	stripeLn, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.stripe)))
	if err != nil {
		return fmt.Errorf("port %d for the Stripe test double is taken (set STRIPE_PORT to use another): %w", p.stripe, err)
	}
	defer stripeLn.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	begin := time.Now()
	fmt.Println("Starting DynamoDB Local, fauxqs and moto (the first run installs them)...")
	stack, err := emulator.StartStack(ctx, emulator.StackOptions{
		RepoRoot:     root,
		DynamoDBPort: p.dynamodb,
		FauxqsPort:   p.fauxqs,
		MotoPort:     p.moto,
		DynamoDBPath: filepath.Join(state, "dynamodb"),
		LogDir:       filepath.Join(state, "logs"),
	})
	if err != nil {
		return err
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	baseURL := "http://127.0.0.1:" + strconv.Itoa(apiPort)
	local := devstack.New(emulator.DynamoDBClient(stack.DynamoDB.Endpoint()), emulator.SQSClient(stack.Fauxqs.Endpoint()),
		emulator.S3Client(stack.Fauxqs.Endpoint()), baseURL)
	// Endpoints routed to model providers (docs/providers.md): the file's
	// document is the template's ProviderRoutes parameter.
	routesFile := os.Getenv("PROVIDER_ROUTES_FILE")
	if path := routesFile; path != "" {
		doc, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("PROVIDER_ROUTES_FILE: %w", err)
		}
		local.ProviderRoutes = string(doc)
	}
	local.UseMoto(stack.Moto.Endpoint())
	local.Secrets = providerSecrets
	if v := os.Getenv("ALLOW_PRIVATE_DESTINATIONS"); v != "" {
		// false: webhooks and input fetches refuse private addresses, as
		// in AWS by default, so the network guard can be tried here.
		if local.AllowPrivateDestinations, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("ALLOW_PRIVATE_DESTINATIONS must be true or false, not %q", v)
		}
	}
	stopEmulators := stack.Stop
	defer func() {
		if err := stopEmulators(); err != nil {
			fmt.Fprintln(os.Stderr, "local:", err)
		}
	}()
	if err := local.Provision(ctx); err != nil {
		return err
	}
	if err := local.ProvisionQueues(ctx, tpl); err != nil {
		return err
	}
	// From here an emulator that exits is started again on its port:
	// DynamoDB Local with its data under .local/, fauxqs empty, its queues
	// and buckets made again here, with the messages of the webhook
	// deliveries still due; moto empty, the webhook signing key made anew
	// and the provider secrets loaded again; the triggers' pollers
	// reconnect by themselves, and the sweeper sends the lost messages of
	// unfinished jobs again.
	resend := func(ctx context.Context) error {
		n, err := local.ResendDeliveries(ctx, time.Now())
		if n > 0 {
			log.Info("webhook deliveries with an attempt due sent to the deliveries queue again", "count", n)
		}
		return err
	}
	if err := resend(ctx); err != nil {
		return err
	}
	stopEmulators = stack.Supervise(emulator.SuperviseOptions{Log: log, Restarted: func(ctx context.Context) error {
		if err := local.Reprovision(ctx, tpl); err != nil {
			return err
		}
		return resend(ctx)
	}}).Stop
	token, err := devstack.SeedDemo(ctx, store.New(local.DynamoDB, local.Table), filepath.Join(state, "demo-token"))
	if err != nil {
		return fmt.Errorf("seed the demo workspace: %w", err)
	}
	if err := local.SeedDemoOwner(ctx, store.New(local.DynamoDB, local.Table), filepath.Join(state, "demo-owner.json")); err != nil {
		return fmt.Errorf("seed the console's demo owner: %w", err)
	}
	// moto's pool is new on every run: the people the table's memberships
	// name come back with temporary passwords (printed below).
	restored, err := local.RestorePeople(ctx, store.New(local.DynamoDB, local.Table), filepath.Join(state, "people.json"))
	if err != nil {
		return fmt.Errorf("restore the console's people of earlier runs: %w", err)
	}
	local.ServeStripe(ctx, stripeLn, baseURL)
	local.Mail.Log = log
	handlers, err := local.Functions(tpl, log)
	if err != nil {
		return err
	}
	gw, err := apigw.New(tpl.Routes(), triggers.HTTP(tpl, handlers), log)
	if err != nil {
		return err
	}
	every := triggers.DefaultScheduleEvery
	if v := os.Getenv("SCHEDULE_EVERY"); v != "" {
		if every, err = time.ParseDuration(v); err != nil || every <= 0 {
			return fmt.Errorf("SCHEDULE_EVERY must be a positive duration such as 5s, not %q", v)
		}
	}
	// The event sources of the template: the jobs queue's mapping to the
	// worker, the sweeper's schedule (every few seconds locally), and any
	// mapping on the table's stream, whose position is kept under .local/
	// so that a restart resumes rather than replays the stream.
	triggerCtx, stopTriggers := context.WithCancel(ctx)
	defer stopTriggers()
	o := local.TriggerOptions()
	o.ScheduleEvery, o.Log = every, log
	o.CheckpointDir = filepath.Join(state, "streams")
	runner, err := triggers.Start(triggerCtx, tpl, handlers, o)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(apigw.JSONErrors(ln)) }()
	// Tools find the stack here, whatever its ports (package endpoints).
	rec := endpoints.Stack{PID: os.Getpid(), API: baseURL, DynamoDB: stack.DynamoDB.Endpoint(),
		Fauxqs: stack.Fauxqs.Endpoint(), Moto: stack.Moto.Endpoint(), State: state, DemoToken: filepath.Join(state, "demo-token"),
		UserPool: local.Pool.PoolID, UserPoolClient: local.Pool.ClientID, Stripe: local.StripeAPIBase}
	if err := endpoints.Write(state, rec); err != nil {
		return fmt.Errorf("record the stack's endpoints: %w", err)
	}
	defer func() { _ = endpoints.Remove(state, rec.PID) }()

	fmt.Printf(`
Generation job API on %[1]s (ready in %.1fs)
  DynamoDB Local  %[3]s   (data in %[9]s; make reset wipes .local/)
  fauxqs (SQS/S3) %[4]s   (queue %[5]s; files in memory only)
  moto (KMS, SM, Cognito) %[10]s   (webhook key %[12]s; %[11]s)
  triggers        %[8]s
  providers       %[13]s

Demo workspace %[6]s, 25 USD, token:
  %[7]s

MCP server (give an MCP client this URL and the token as a bearer token; docs/mcp.md):
  %[1]s/mcp

The console: open %[1]s/app and sign in as the demo owner
  email    %[14]s
  password %[15]s
  (also in .local/demo-owner.json; payments go to the Stripe test double on %[16]s;
  moto sends no email: "Forgot your password?" logs its code here)

For the command line (go install ./cmd/genjobs, then genjobs --help):
  export GENJOBS_TOKEN=%[7]s
  export GENJOBS_API_URL=%[1]s

Try:
  curl -s %[1]s/generate/3d/vendor-g/model-g-3.1-rapid \
    -H "Authorization: Bearer %[7]s" -H "Content-Type: application/json" -d '{"prompt":"a teapot"}'
  curl -s %[1]s/jobs -H "Authorization: Bearer %[7]s"

Ctrl-C stops everything.
`, baseURL, time.Since(begin).Seconds(), stack.DynamoDB.Endpoint(), stack.Fauxqs.Endpoint(), local.JobsQueueURL, devstack.DemoWorkspace, token,
		strings.Join(runner.Triggers(), "\n                  "), relative(root, filepath.Join(state, "dynamodb")),
		stack.Moto.Endpoint(), secretsNote(providerSecrets, local.SecretsPrefix()), local.SigningKeyAlias(),
		routesNote(routesFile, local.ProviderRoutes, baseURL),
		devstack.DemoOwnerEmail, devstack.DemoOwnerPassword, local.StripeAPIBase)
	if len(restored) > 0 {
		// moto keeps no Cognito state across runs.
		fmt.Printf("People added in earlier runs are back in the console's user pool, each with a new temporary\npassword to sign in with once and then replace (also in %s):\n", relative(root, filepath.Join(state, "people.json")))
		for _, p := range restored {
			fmt.Printf("  %-40s %s\n", p.Email, p.TemporaryPassword)
		}
		fmt.Println()
	}

	select {
	case <-ctx.Done():
		fmt.Println("\nStopping...")
	case err = <-served:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	stopTriggers()
	runner.Wait() // invocations in flight finish, or end at their timeout
	return err
}

// secretsNote says which provider secrets were loaded, by name only.
func secretsNote(p devstack.ProviderSecrets, prefix string) string {
	if len(p) == 0 {
		return "no provider secrets; set " + devstack.ProviderSecretsFileEnv + " to load some"
	}
	return fmt.Sprintf("provider secrets %s under %s", strings.Join(p.Names(), ", "), prefix)
}

// routesNote says which routes file was loaded and what it routes where,
// and where a Cog server's --upload-url points.
func routesNote(path, doc, baseURL string) string {
	if path == "" {
		return "no provider routes; set PROVIDER_ROUTES_FILE to route endpoints to model providers"
	}
	var routes map[string]struct {
		Provider string `json:"provider"`
	}
	_ = json.Unmarshal([]byte(doc), &routes) // the functions checked it at init
	var lines []string
	cog := false
	for _, ep := range slices.Sorted(maps.Keys(routes)) {
		lines = append(lines, ep+" -> "+routes[ep].Provider)
		cog = cog || routes[ep].Provider == "cog"
	}
	note := fmt.Sprintf("routes from %s: %s", path, strings.Join(lines, "\n                  "))
	if cog {
		note += "\n                  a Cog server's upload store: --upload-url " + baseURL + "/callbacks/cog/uploads/" +
			"\n                  (a route whose secret has a webhook_token: --upload-url " +
			strings.Replace(baseURL, "://", "://cog:{webhook_token}@", 1) + "/callbacks/cog/uploads/)"
	}
	return note
}

// relative names path from the repository when it is inside it.
func relative(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
