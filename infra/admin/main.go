// Command admin is the operator CLI, the stand-in for the web application's
// settings pages (docs/operations.md, "The operator CLI"):
//
//	go run ./infra/admin --help
//	go run ./infra/admin workspace create --name Acme
//	go run ./infra/admin --aws --stack genjobs balance show --workspace ws_...
//
// Every successful command prints one JSON object on stdout. Exit status: 0
// done, 1 the command failed, 2 bad arguments (nothing was written).
//
// It talks to the local stack (the DynamoDB Local that make run recorded in
// .local/endpoints.json, or 127.0.0.1:$DYNAMODB_PORT; for webhook redeliver
// its fauxqs too) unless --aws is given: credentials in the environment alone
// never send it to AWS, so an operator's shell cannot top up production by
// accident.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/internal/clock"
	"genjobs/internal/emulator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Every command is a handful of requests; a hung endpoint should not
	// hold the operator's terminal for ever.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c := &cli{clock: clock.System{}, getenv: os.Getenv, repoRoot: emulator.RepoRoot}
	code := c.run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	stop()
	os.Exit(code)
}

// command is one entry of the command table.
type command struct {
	name     string // the command words, "workspace create"
	synopsis string // its flags, as the help shows them
	summary  string
	run      func(c *cli, ctx context.Context, args []string, stdout io.Writer) error
}

var commands = []command{
	{"workspace create", "--name N [--max-concurrent 20] [--max-running 5]",
		"create a workspace, API access disabled; prints {workspace_id}", (*cli).workspaceCreate},
	{"workspace enable-api", "--workspace W",
		"let the workspace's tokens call the API; prints {workspace_id, api_enabled}", (*cli).workspaceEnableAPI},
	{"workspace disable-api", "--workspace W",
		"refuse the workspace's tokens (401) until enabled again; prints {workspace_id, api_enabled}", (*cli).workspaceDisableAPI},
	{"workspace verify", "--workspace W",
		"recount the workspace's unfinished jobs against its slot counters; prints {workspace_id, stored, counted, differences}, exits 1 on any difference", (*cli).workspaceVerify},
	{"token create", "--workspace W --name N",
		"create an API token; prints {token_id, token}, the only time the token is shown", (*cli).tokenCreate},
	{"token revoke", "--workspace W --token-id T",
		"revoke a token at once; prints {token_id, revoked}", (*cli).tokenRevoke},
	{"workspace invoice", "--workspace W --credit-limit-usd N",
		"put the workspace on Net 30 terms: its jobs run without a prepaid balance until it owes N USD (0 ends it); prints the balance", (*cli).workspaceInvoice},
	{"balance topup", "--workspace W --usd AMOUNT --payment-id P",
		"credit 5 to 10000 USD once per payment id (the application's presets: 10, 25, 50, 100); prints {available_usd, reserved_usd, spent_usd}", (*cli).balanceTopUp},
	{"balance show", "--workspace W",
		"print the balance: {available_usd, reserved_usd, spent_usd}, and credit_limit_usd and owed_usd when invoiced", (*cli).balanceShow},
	{"ledger verify", "(--workspace W | --all)",
		"recompute available, reserved and spent, in USD and in compute units, from the ledger entries and the jobs; prints the differences, exits 1 on any", (*cli).ledgerVerify},
	{"workspace plan", "--workspace W --monthly-units N",
		"give the workspace a plan: on the first day of each UTC month its compute units are topped back up to N (0 ends it; a new plan tops up at once); prints {workspace_id, monthly_units, topped_up_cu, available_cu, reserved_cu, spent_cu}", (*cli).workspacePlan},
	{"member add", "--workspace W --email E --role R",
		"make E a member of W with role owner, admin or member (the console's people), creating the user with a temporary password when new; prints {user_id, temporary_password}", (*cli).memberAdd},
	{"member remove", "--workspace W --email E",
		"end E's membership of W and revoke their MCP connections to it (a workspace keeps at least one owner); prints {user_id, removed, connections_revoked}", (*cli).memberRemove},
	{"member reset-password", "--workspace W --email E",
		"give E, a member of W, a new temporary password (they choose their own at their next sign-in); a member the user pool lost gets a new user; prints {user_id, temporary_password}", (*cli).memberResetPassword},
	{"member disable", "--email E",
		"disable E in the user pool (no more sign-ins; their console sessions end within 5 minutes) and revoke their MCP connections in every workspace; prints {user_id, disabled, connections_revoked, connections: [{grant_id, workspace_id, client_name}]}", (*cli).memberDisable},
	{"member enable", "--email E",
		"let E, disabled, sign in again (their connections stay revoked: they connect again); prints {user_id, enabled}", (*cli).memberEnable},
	{"member list", "--workspace W",
		"print W's members: {workspace_id, members: [{user_id, email, role, added_at}]}", (*cli).memberList},
	{"webhook redeliver", "--job J",
		"send a job's waiting or failed webhook now, as its next attempt, instead of after its retry wait; prints {job_id, webhook_id, attempt, host, was}", (*cli).webhookRedeliver},
}

// globals are the flags accepted before or after the command words.
type globals struct {
	aws   bool
	table string
	stack string
}

// cli is one invocation. Tests set target to their own table; otherwise
// the global flags and the environment choose it.
type cli struct {
	clock  clock.Clock
	getenv func(string) string
	// repoRoot finds the repository, whose .local/endpoints.json says where
	// make run serves (emulator.RepoRoot).
	repoRoot func() (string, error)
	target   *target
	// users is the console's user pool (member add), found on first use
	// unless a test set it.
	users users

	g   globals
	cmd *command // the command being run, for its --help
}

// usageError is a bad invocation: exit 2, nothing was written.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// errHelpShown ends a command whose --help was printed: exit 0.
var errHelpShown = errors.New("help shown")

// run executes args (without the program name) and returns the exit status.
func (c *cli) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := c.dispatch(ctx, args, stdout)
	var usage usageError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "admin:", oneLine(usage.msg))
		return 2
	default:
		fmt.Fprintln(stderr, "admin:", oneLine(err.Error()))
		return 1
	}
}

// oneLine keeps an error to the single stderr line the CLI promises, even
// when an SDK error carries newlines.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func (c *cli) dispatch(ctx context.Context, args []string, stdout io.Writer) error {
	// Global flags before the command words; the flag package stops at the
	// first word.
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.globalFlags(fs)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(stdout, "")
		return errHelpShown
	}
	if err != nil {
		return usagef("%v (run with --help for usage)", err)
	}
	words := fs.Args()
	if len(words) == 0 {
		return usagef("no command given (run with --help for the list)")
	}
	group := words[0]
	known := slices.ContainsFunc(commands, func(cmd command) bool { return strings.HasPrefix(cmd.name, group+" ") })
	if len(words) == 1 || strings.HasPrefix(words[1], "-") {
		if !known {
			return usagef("unknown command %q (run with --help for the list)", group)
		}
		if len(words) > 1 && (words[1] == "-h" || words[1] == "-help" || words[1] == "--help") {
			printHelp(stdout, group)
			return errHelpShown
		}
		return usagef("%s: missing subcommand (run %q for the list)", group, group+" --help")
	}
	name := words[0] + " " + words[1]
	i := slices.IndexFunc(commands, func(cmd command) bool { return cmd.name == name })
	if i < 0 {
		return usagef("unknown command %q (run with --help for the list)", name)
	}
	c.cmd = &commands[i]
	return c.cmd.run(c, ctx, words[2:], stdout)
}

func (c *cli) globalFlags(fs *flag.FlagSet) {
	// Current values as defaults: globals given before the command words
	// survive the command's own FlagSet.
	fs.BoolVar(&c.g.aws, "aws", c.g.aws, "talk to AWS through the usual credential chain (without it: always the local stack)")
	fs.StringVar(&c.g.table, "table", c.g.table, "`NAME` of the table (locally: default "+devstack.Table+")")
	fs.StringVar(&c.g.stack, "stack", c.g.stack, "with --aws: the CloudFormation stack `NAME` whose TableName output names the table")
}

// flags returns the FlagSet of the running command, with the global flags,
// silent: errors come back as one line, --help goes to stdout.
func (c *cli) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(c.cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	c.globalFlags(fs)
	return fs
}

// parse parses a command's flags; it refuses positional arguments, which
// are always a mistake here (a forgotten "--name" before a value).
func (c *cli) parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.printCommandHelp(stdout, fs)
		return errHelpShown
	}
	if err != nil {
		return usagef("%s: %v (run %q for usage)", c.cmd.name, err, c.cmd.name+" --help")
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (run %q for usage)", c.cmd.name, fs.Arg(0), c.cmd.name+" --help")
	}
	return nil
}

// printCommandHelp shows the command's own flags, then the global ones,
// written with two dashes as the rest of the CLI's text does.
func (c *cli) printCommandHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: go run ./infra/admin %s %s\n\n%s.\n", c.cmd.name, c.cmd.synopsis, capitalize(c.cmd.summary))
	global := map[string]bool{"aws": true, "table": true, "stack": true}
	for _, section := range []struct {
		title  string
		global bool
	}{{"Flags", false}, {"Global flags", true}} {
		fmt.Fprintf(w, "\n%s:\n", section.title)
		fs.VisitAll(func(f *flag.Flag) {
			if global[f.Name] != section.global {
				return
			}
			arg, usage := flag.UnquoteUsage(f)
			if arg == "value" || f.DefValue == "false" {
				arg = "" // a bool flag takes no argument
			}
			head := strings.TrimSpace("--" + f.Name + " " + arg)
			if f.DefValue != "" && f.DefValue != "false" && !section.global {
				usage += " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(w, "  %-22s %s\n", head, usage)
		})
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// printHelp lists the commands, or those of one group.
func printHelp(w io.Writer, group string) {
	fmt.Fprint(w, `The operator CLI: workspaces, API tokens, balances and styles (the stand-in
for the web application's settings pages), and webhooks to send again.

usage: go run ./infra/admin [--aws (--table NAME | --stack NAME)] <command> [flags]

Commands:
`)
	for _, cmd := range commands {
		if group == "" || strings.HasPrefix(cmd.name, group+" ") {
			fmt.Fprintf(w, "  %-22s %s\n  %-22s   %s\n", cmd.name, cmd.synopsis, "", cmd.summary)
		}
	}
	fmt.Fprintf(w, `
Global flags, before or after the command words:
  --aws          talk to AWS through the usual credential chain; without it the
                 CLI always talks to the local stack, whatever the environment
  --table NAME   the table (locally: default %s)
  --stack NAME   with --aws: the CloudFormation stack whose TableName output
                 names the table

Locally it uses the DynamoDB Local that make run started, on whatever port
(it reads .local/endpoints.json); DYNAMODB_PORT overrides it. webhook redeliver
also sends to its fauxqs (FAUXQS_PORT overrides it), or with --aws to the
stack's deliveries queue. Every command prints one JSON object on stdout and has
--help. Exit status: 0 done, 1 failed, 2 bad arguments (nothing written).
`, devstack.Table)
}
