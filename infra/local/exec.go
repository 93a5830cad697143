package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"genjobs/internal/emulator"
)

// exitError carries the command's exit status out of runExec, so that it is
// passed on only after the emulators are stopped.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("command exited with status %d", e.code) }

// execCommand starts throwaway in-memory emulators on free ports, runs the
// command with their endpoints in its environment, stops them and exits
// with the command's status.
func execCommand(args []string) error {
	err := runExec(args)
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code) // the command has said why it failed
	}
	return err
}

func runExec(args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return errors.New("usage: exec [--] COMMAND [ARG...]")
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return err
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}

	// Signals arrive from here on: before the command runs they cancel the
	// start, afterwards they are passed on to the command.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// A SIGTERM aimed at `go run` (or make) alone would orphan this process,
	// which would then keep the command and emulators up: have the kernel
	// send SIGTERM here when the parent dies, to clean up as for any signal.
	ppid := os.Getppid()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", errno)
	}
	if os.Getppid() != ppid { // the parent died before prctl took effect
		return errors.New("parent process exited")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first os.Signal // written by the watcher, read after it has returned
	started, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case first = <-sigs:
			cancel()
		case <-started:
		}
	}()

	begin := time.Now()
	stack, err := emulator.StartStack(ctx, emulator.StackOptions{RepoRoot: root, LogPrefix: "exec-"})
	close(started)
	<-watched
	if first != nil {
		if stack != nil {
			_ = stack.Stop()
		}
		return &exitError{signalStatus(first)}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := stack.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "local:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "local: DynamoDB Local at %s, fauxqs at %s, moto at %s (ready in %s; logs in %s)\n",
		stack.DynamoDB.Endpoint(), stack.Fauxqs.Endpoint(), stack.Moto.Endpoint(), time.Since(begin).Round(100*time.Millisecond), emulator.LogDir(root))

	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = withEnv(os.Environ(), map[string]string{
		"GENJOBS_TEST_DYNAMODB_ENDPOINT": stack.DynamoDB.Endpoint(),
		"GENJOBS_TEST_SQS_ENDPOINT":      stack.Fauxqs.Endpoint(),
		"GENJOBS_TEST_MOTO_ENDPOINT":     stack.Moto.Endpoint(),
		"AWS_ACCESS_KEY_ID":              emulator.AccessKey,
		"AWS_SECRET_ACCESS_KEY":          emulator.SecretKey,
		"AWS_REGION":                     emulator.Region,
		"AWS_SESSION_TOKEN":              "", // a real session's token must not ride along
	})
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			// A terminal's Ctrl-C has reached the command already (same
			// process group); a kill aimed at this process has not.
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			var xe *exec.ExitError
			if errors.As(err, &xe) {
				if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return &exitError{128 + int(ws.Signal())}
				}
				return &exitError{xe.ExitCode()}
			}
			return err
		}
	}
}

// signalStatus is the shell's status for a death by sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// withEnv returns env with the given variables set, replacing earlier
// values; an empty value removes the variable.
func withEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok {
			out = append(out, kv)
		}
	}
	for name, value := range set {
		if value != "" {
			out = append(out, name+"="+value)
		}
	}
	return out
}
