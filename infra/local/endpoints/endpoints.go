// Package endpoints records where `make run` serves the local stack, so that
// every tool that talks to it (the operator CLI, make invoke, the example
// receiver, bigenhance, genjobs) finds it on whatever ports it was started,
// without being told again. The runner writes endpoints.json into its state
// directory (<repo>/.local unless told otherwise, which is where the tools
// look) when it is up and removes it when it stops; a file left by a runner
// that was killed names a process that is gone and is ignored.
package endpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// File is the record's name under the repository's .local/.
const File = "endpoints.json"

// Stack is where one running `make run` serves.
type Stack struct {
	PID      int    `json:"pid"`      // the runner's process
	API      string `json:"api"`      // the API's base URL, http://127.0.0.1:3000
	DynamoDB string `json:"dynamodb"` // DynamoDB Local's endpoint
	Fauxqs   string `json:"fauxqs"`   // fauxqs's endpoint (SQS and S3)
	// Moto is moto's server (KMS, Secrets Manager), when the stack runs one.
	Moto string `json:"moto,omitempty"`
	// State is the directory of the stack's data (-state), and DemoToken
	// the file holding the demo workspace's token.
	State     string `json:"state"`
	DemoToken string `json:"demo_token"`
	// The console's Cognito user pool and app client in moto, and the
	// Stripe test double's address.
	UserPool       string `json:"user_pool,omitempty"`
	UserPoolClient string `json:"user_pool_client,omitempty"`
	Stripe         string `json:"stripe,omitempty"`
}

// ErrNotRunning is returned by Find when no running stack is recorded.
var ErrNotRunning = errors.New("the local stack is not running; start it with make run")

// Path is the record's path in the state directory dir.
func Path(dir string) string { return filepath.Join(dir, File) }

// StateDir is the default state directory of the repository at root, where
// the tools look.
func StateDir(root string) string { return filepath.Join(root, ".local") }

// Write records s in the state directory dir.
func Write(dir string, s Stack) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	path := Path(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Written whole and renamed, so that a reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Remove deletes the record if it is still the one of process pid (another
// runner may have replaced it).
func Remove(dir string, pid int) error {
	s, err := read(dir)
	if err != nil || s.PID != pid {
		return nil
	}
	return os.Remove(Path(dir))
}

// Find reads the record in the state directory dir: ErrNotRunning when
// there is none or its runner is gone.
func Find(dir string) (Stack, error) {
	s, err := read(dir)
	if errors.Is(err, os.ErrNotExist) {
		return Stack{}, ErrNotRunning
	}
	if err != nil {
		return Stack{}, fmt.Errorf("read %s: %w", Path(dir), err)
	}
	if !alive(s.PID) {
		return Stack{}, ErrNotRunning
	}
	return s, nil
}

func read(dir string) (Stack, error) {
	b, err := os.ReadFile(Path(dir))
	if err != nil {
		return Stack{}, err
	}
	var s Stack
	if err := json.Unmarshal(b, &s); err != nil {
		return Stack{}, err
	}
	return s, nil
}

// alive reports whether process pid exists (signal 0 checks without
// sending anything).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// DefaultAPI is the default of the tools' API address: the running
// make run's, found from the working directory's repository, else
// http://127.0.0.1:3000. It never fails: a tool's flag can still say
// otherwise.
func DefaultAPI() string {
	if s, err := Running(); err == nil {
		return s.API
	}
	return "http://127.0.0.1:3000"
}

// Running is the record of the repository holding the working directory
// (the nearest parent with a go.mod beside a template.yaml: client/ has a
// go.mod of its own).
func Running() (Stack, error) {
	dir, err := os.Getwd()
	if err != nil {
		return Stack{}, err
	}
	for {
		_, mod := os.Stat(filepath.Join(dir, "go.mod"))
		_, tpl := os.Stat(filepath.Join(dir, "template.yaml"))
		if mod == nil && tpl == nil {
			return Find(StateDir(dir))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Stack{}, ErrNotRunning
		}
		dir = parent
	}
}
