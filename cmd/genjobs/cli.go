package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"genjobs/client"
)

// Exit codes (docs/cli.md).
const (
	exitOK        = 0 // success; with --wait, a completed job
	exitJobFailed = 1 // the job failed or was cancelled
	exitUsage     = 2 // bad command line, or a local file that cannot be read
	exitRefused   = 3 // the API refused (4xx other than 401, 5xx after retries), or could not be reached
	exitAuth      = 4 // the API did not accept the token (401)
)

// cli is one run of the command, with its streams and environment, so
// that tests run it in-process.
type cli struct {
	stdin                io.Reader
	stdout, stderr       io.Writer
	getenv               func(string) string
	stdoutTTY, stderrTTY bool
	// defaultAPI is the API URL when neither --api-url nor GENJOBS_API_URL
	// gives one (main: the running make run's); nil means client.DefaultAPIURL.
	defaultAPI func() string

	// set by the global flags
	token, apiURL string
	asJSON        bool
	// options added to the client (tests: the sleep)
	clientOptions []client.Option

	printMu sync.Mutex // webhook listen prints from concurrent deliveries
}

// usageError is a bad command line: exit 2 with its message.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// command is one subcommand.
type command struct {
	name, args, summary, example string
	run                          func(c *cli, ctx context.Context, fs *flag.FlagSet, args []string) error
	flags                        func(fs *flag.FlagSet)
}

func commands() []*command {
	return []*command{
		generateCommand(),
		{name: "jobs get", args: "ID", summary: "Print a job's record.", example: "genjobs jobs get 0194b3a0-5c6e-7d2f-9a01-23456789abcd", run: (*cli).jobsGet},
		jobsListCommand(),
		{name: "jobs show", args: "ID", summary: "Print a job's details: endpoint, input, source, who made it, cost, start and end, route.",
			example: "genjobs jobs show 0194b3a0-5c6e-7d2f-9a01-23456789abcd", run: (*cli).jobsShow},
		{name: "jobs wait", args: "ID [--out PATH|DIR/]", summary: "Wait until a job ends; with --out, write its result files.",
			example: "genjobs jobs wait 0194b3a0-5c6e-7d2f-9a01-23456789abcd --out bike.png", run: (*cli).jobsWait, flags: outFlag},
		{name: "jobs cancel", args: "ID", summary: "Cancel a job that has not ended.", example: "genjobs jobs cancel 0194b3a0-5c6e-7d2f-9a01-23456789abcd", run: (*cli).jobsCancel},
		{name: "jobs download", args: "ID [--out PATH|DIR/]", summary: "Write a completed job's result files (by default the first, named as in its URL, in this directory).",
			example: "genjobs jobs download 0194b3a0-5c6e-7d2f-9a01-23456789abcd --out results/", run: (*cli).jobsDownload, flags: outFlag},
		{name: "jobs deliveries", args: "ID", summary: "List the webhook delivery attempts of a job.", example: "genjobs jobs deliveries 0194b3a0-5c6e-7d2f-9a01-23456789abcd", run: (*cli).jobsDeliveries},
		{name: "assets upload", args: "FILE", summary: "Upload a PNG, JPEG or WebP image (up to 50 MiB) and print its asset URL, an image input of your jobs.",
			example: "genjobs assets upload photo.jpg", run: (*cli).assetsUpload},
		usageCommand(),
		stylesListCommand(),
		{name: "styles share", args: "ID", summary: "Make (or read again) the share link of a style you own.", example: "genjobs styles share sty_demo_api_sketch", run: (*cli).stylesShare},
		webhookListenCommand(),
		{name: "models", summary: "List the models: each endpoint's fields (type, bounds, default), price rule and typical duration.",
			example: "genjobs models", run: (*cli).models},
	}
}

// run runs the command line args and returns the exit code.
func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		c.mainUsage(c.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, rest := find(args)
	if cmd == nil {
		if group := groupOf(args[0]); group != nil {
			return c.groupUsage(args, group)
		}
		fmt.Fprintf(c.stderr, "genjobs: unknown command %q\n\n", strings.Join(args[:min(2, len(args))], " "))
		c.mainUsage(c.stderr)
		return exitUsage
	}
	fs := flag.NewFlagSet("genjobs "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.token, "token", "", "the API token, `TOKEN` (default $"+client.TokenEnv+")")
	fs.StringVar(&c.apiURL, "api-url", "", "the API's base `URL` (default $"+client.APIURLEnv+", else the running make run's, else "+client.DefaultAPIURL+")")
	fs.BoolVar(&c.asJSON, "json", false, "print the API's JSON even on a terminal")
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	positional, err := parse(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		c.commandUsage(c.stdout, cmd, fs)
		return exitOK
	}
	if err == nil {
		err = cmd.run(c, ctx, fs, positional)
	}
	return c.fail(err, cmd, fs)
}

// fail reports err and returns its exit code.
func (c *cli) fail(err error, cmd *command, fs *flag.FlagSet) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	var ae *client.APIError
	var failed *client.JobFailedError
	var cancelled *client.JobCancelledError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "genjobs %s: %s\n", cmd.name, ue.msg)
		fmt.Fprintf(c.stderr, "usage: genjobs %s %s (genjobs %s --help)\n", cmd.name, cmd.args, cmd.name)
		return exitUsage
	case errors.As(err, &failed):
		code, msg := "", ""
		if failed.Job.Error != nil {
			code, msg = failed.Job.Error.Code, failed.Job.Error.Message
		}
		fmt.Fprintf(c.stderr, "genjobs: job %s failed: %s", failed.Job.ID, code)
		if msg != "" {
			fmt.Fprintf(c.stderr, ": %s", msg)
		}
		fmt.Fprintln(c.stderr)
		return exitJobFailed
	case errors.As(err, &cancelled):
		fmt.Fprintf(c.stderr, "genjobs: job %s was cancelled\n", cancelled.Job.ID)
		return exitJobFailed
	case errors.As(err, &ae):
		fmt.Fprintf(c.stderr, "genjobs: %s\n", apiMessage(ae))
		if ae.StatusCode == 401 {
			fmt.Fprintf(c.stderr, "genjobs: set %s (or --token) to a token of a workspace with API access\n", client.TokenEnv)
			return exitAuth
		}
		return exitRefused
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(c.stderr, "genjobs: interrupted")
		return exitRefused
	default:
		fmt.Fprintf(c.stderr, "genjobs: %s\n", strings.TrimPrefix(err.Error(), "client: "))
		return exitRefused
	}
}

// apiMessage is the API's refusal in the command's words (the client's
// Error says "genjobs API: ...", which after "genjobs: " says it twice).
func apiMessage(e *client.APIError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the API answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Detail != "" {
		b.WriteString(" (" + e.Detail + ")")
	}
	if e.RequestID != "" {
		b.WriteString(" [request " + e.RequestID + "]")
	}
	return b.String()
}

// groupOf lists the commands whose name starts with the word group (jobs,
// assets, styles, webhook), or nil.
func groupOf(group string) []*command {
	var out []*command
	for _, cmd := range commands() {
		if first, _, more := strings.Cut(cmd.name, " "); more && first == group {
			out = append(out, cmd)
		}
	}
	return out
}

// groupUsage answers a group's name alone or with --help by listing its
// commands; anything else after it is an unknown command.
func (c *cli) groupUsage(args []string, group []*command) int {
	name := args[0]
	list := func(w io.Writer) {
		fmt.Fprintf(w, "usage: genjobs %s COMMAND\n\nCommands:\n", name)
		for _, cmd := range group {
			fmt.Fprintf(w, "  %-16s %s\n", cmd.name, cmd.summary)
		}
		fmt.Fprintf(w, "\ngenjobs %s COMMAND --help describes one.\n", name)
	}
	switch {
	case len(args) > 1 && (args[1] == "-h" || args[1] == "--help" || args[1] == "help"):
		list(c.stdout)
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(c.stderr, "genjobs: unknown command %q\n\n", name+" "+args[1])
	}
	list(c.stderr)
	return exitUsage
}

// find matches the longest command name at the start of args.
func find(args []string) (*command, []string) {
	for _, cmd := range commands() {
		words := strings.Fields(cmd.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == cmd.name {
			return cmd, args[len(words):]
		}
	}
	return nil, nil
}

// parse reads flags wherever they stand among the positional arguments
// (genjobs generate MODEL prompt=x --wait --out f.png); after "--" every
// argument is positional.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// client builds the API client from the flags and the environment.
func (c *cli) client() (*client.Client, error) {
	token, apiURL := c.token, c.apiURL
	if token == "" {
		token = c.getenv(client.TokenEnv)
	}
	if apiURL == "" {
		apiURL = c.getenv(client.APIURLEnv)
	}
	if apiURL == "" && c.defaultAPI != nil {
		apiURL = c.defaultAPI()
	}
	if apiURL == "" {
		apiURL = client.DefaultAPIURL
	}
	if token == "" {
		return nil, usagef("no API token: set %s or give --token", client.TokenEnv)
	}
	cl, err := client.NewClient(append([]client.Option{client.WithToken(token), client.WithBaseURL(apiURL)}, c.clientOptions...)...)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return cl, nil
}

// print writes the API's JSON, one document per line, when stdout is
// not a terminal or with --json; else human writes the short form.
func (c *cli) print(raw json.RawMessage, human func(w io.Writer)) {
	c.printMu.Lock()
	defer c.printMu.Unlock()
	if c.asJSON || !c.stdoutTTY || human == nil {
		c.stdout.Write(append(compact(raw), '\n'))
		return
	}
	human(c.stdout)
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// humanJob is a job's short form.
func humanJob(j *client.Job) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprintf(w, "%s  %s", j.ID, j.Status)
		if j.Progress != nil && !j.Status.Terminal() {
			fmt.Fprintf(w, "  %.0f%%", *j.Progress*100)
		}
		if j.Error != nil {
			fmt.Fprintf(w, "  %s: %s", j.Error.Code, j.Error.Message)
		}
		fmt.Fprintf(w, "  created %s\n", j.CreatedAt.Local().Format("2006-01-02 15:04:05"))
		if j.Result != nil {
			for _, u := range j.Result.URLs {
				fmt.Fprintf(w, "  %s\n", u)
			}
		}
	}
}

func (c *cli) mainUsage(w io.Writer) {
	fmt.Fprintf(w, `genjobs: the command line of the generation job API.

Configuration: %s (the API token), %s (default: where make run
serves in this repository, else %s); the flags --token and --api-url
override them. Output: the API's JSON on
stdout when it is not a terminal (always with --json), a short form on a
terminal; messages and the progress bar on stderr.

Commands:
`, client.TokenEnv, client.APIURLEnv, client.DefaultAPIURL)
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-16s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, `
Example:
  genjobs generate image/vendor-b/model-e-4 prompt="a red bicycle" width=1024 height=768 --wait --out bike.png

Exit codes: 0 success, 1 the job failed or was cancelled, 2 usage error,
3 the API refused the request or could not be reached, 4 authentication.
genjobs COMMAND --help describes a command.
`)
}

func (c *cli) commandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: genjobs %s %s\n\n%s\n", cmd.name, cmd.args, cmd.summary)
	if cmd.name == "generate" {
		generateHelp(w)
	}
	fmt.Fprintf(w, "\nFlags:\n")
	printFlags(w, fs)
	fmt.Fprintf(w, "\nExample:\n  %s\n", cmd.example)
}

// printFlags lists fs's flags as the docs write them: --name for a long
// flag, -d for a one-letter one (flag.PrintDefaults gives every name one
// dash).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-"
		}
		arg, usage := flag.UnquoteUsage(f)
		line := "  " + dashes + f.Name
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// one checks the command got exactly one positional argument.
func one(args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", usagef("want one %s, got %d arguments", what, len(args))
	}
	return args[0], nil
}

// clientFor reads a command's one argument (what it is, for the usage
// error) and makes the API client.
func (c *cli) clientFor(args []string, what string) (string, *client.Client, error) {
	arg, err := one(args, what)
	if err != nil {
		return "", nil, err
	}
	cl, err := c.client()
	return arg, cl, err
}

// clientWithoutArgs refuses positional arguments (the command takes flags
// only) and returns the API client.
func (c *cli) clientWithoutArgs(args []string) (*client.Client, error) {
	if len(args) != 0 {
		return nil, usagef("unexpected arguments %s", strings.Join(args, " "))
	}
	return c.client()
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonObject(k, v string) ([]byte, error) { return json.Marshal(map[string]string{k: v}) }
