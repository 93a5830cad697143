package main

import (
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"genjobs/infra/local/endpoints"
	"genjobs/internal/emulator"
)

// kill -TERM of the make process alone (what a process supervisor or an IDE's
// stop button sends) must stop the whole stack: the runner, DynamoDB Local and
// fauxqs and moto, with their ports freed and the endpoints record gone. The stack
// runs on free ports with its data in a directory of its own, so the test
// can run beside a developer's make run.
func TestKillTermOfMakeRunStopsTheWholeStack(t *testing.T) {
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	ports := []int{freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)}
	cmd := exec.Command("make", "-s", "-C", root, "run", "RUN_FLAGS=-state "+state)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(ports[0]),
		"DYNAMODB_PORT="+strconv.Itoa(ports[1]), "FAUXQS_PORT="+strconv.Itoa(ports[2]),
		"MOTO_PORT="+strconv.Itoa(ports[3]), "STRIPE_PORT="+strconv.Itoa(ports[4]))
	cmd.Stdout, cmd.Stderr = &logTail{}, &logTail{}
	// Its own process group, so that a failing test can still clean up all
	// of it; the signal under test goes to make alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var rec endpoints.Stack
	deadline := time.Now().Add(3 * time.Minute) // the first run builds and installs
	for {
		if rec, err = endpoints.Find(state); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("make run exited before serving: %v\nstdout: %s\nstderr: %s", err, cmd.Stdout, cmd.Stderr)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not record its endpoints in %s\nstderr: %s", state, cmd.Stderr)
		}
	}
	if resp, err := http.Get(rec.API + "/openapi.json"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the recorded API %s does not answer: %v %v", rec.API, resp, err)
	}

	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("make did not exit within 30 s of SIGTERM")
	}
	// The runner stops its emulators before it exits, and make waits for it.
	for _, p := range ports {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still serves after make exited", p)
		}
	}
	if err := syscall.Kill(rec.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the runner (pid %d) is still there: %v", rec.PID, err)
	}
	if _, err := os.Stat(filepath.Join(state, endpoints.File)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the endpoints record is left behind: %v", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// logTail keeps the last 4 KiB of a stream for failure messages.
type logTail struct {
	mu sync.Mutex
	b  []byte
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if len(l.b) > 4096 {
		l.b = l.b[len(l.b)-4096:]
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
