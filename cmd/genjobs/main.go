// Command genjobs is the command line of the generation job API, built on
// the client package: create jobs and wait for their files, list, cancel
// and download jobs, upload assets, read usage and styles, and receive
// webhooks on this machine. genjobs --help lists the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"genjobs/infra/local/endpoints"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := (&cli{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())), stderrTTY: term.IsTerminal(int(os.Stderr.Fd())),
		defaultAPI: endpoints.DefaultAPI,
	}).run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
