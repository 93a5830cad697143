package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// readyTimeout bounds how long a start waits for the first real answer.
	readyTimeout = 60 * time.Second
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 3 * time.Second
	// freePortAttempts covers the race between choosing a free port and the
	// child binding it.
	freePortAttempts = 3
)

// Process is a running emulator.
type Process struct {
	name     string
	endpoint string
	port     int
	pid      int
	logPath  string
	logStart int64
	spec     spec      // how it was started, for a restart
	started  time.Time // when it answered its first request

	done    chan struct{} // closed once the child is reaped
	waitErr error         // set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// Endpoint is the emulator's base URL, http://127.0.0.1:PORT.
func (p *Process) Endpoint() string { return p.endpoint }

// Port is the port the emulator listens on.
func (p *Process) Port() int { return p.port }

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// LogFile is the file the child's output goes to.
func (p *Process) LogFile() string { return p.logPath }

// Done is closed when the child has exited, whether stopped or crashed.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop terminates the child's whole process group: SIGTERM, then SIGKILL
// after a grace period, and reaps it. It returns an error if the child had
// already exited by itself. Calling it again returns the same result.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.stop() })
	return p.stopErr
}

func (p *Process) stop() error {
	var crashed error
	select {
	case <-p.done:
		crashed = fmt.Errorf("%s had exited before Stop (%v)%s", p.name, p.waitErr, p.logTail())
	default:
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			<-p.done
		}
	}
	// The leader is reaped; anything it left in its group goes too.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(-p.pid, 0) != syscall.ESRCH {
		if time.Now().After(deadline) {
			return errors.Join(crashed, fmt.Errorf("%s: process group %d still alive after SIGKILL", p.name, p.pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return crashed
}

// logTail returns the end of what this run wrote to the log, for errors.
func (p *Process) logTail() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tailBytes = 3000
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	from := max(p.logStart, fi.Size()-tailBytes)
	b := make([]byte, fi.Size()-from)
	n, _ := f.ReadAt(b, from)
	s := strings.TrimSpace(string(b[:n]))
	if s == "" {
		return fmt.Sprintf("\n(log %s is empty)", p.logPath)
	}
	return fmt.Sprintf("\n--- end of %s ---\n%s", p.logPath, s)
}

// logFind returns the first of texts that this run wrote to the log.
func (p *Process) logFind(texts []string) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 64<<10) // start-up output is short
	n, _ := f.ReadAt(b, p.logStart)
	for _, text := range texts {
		if bytes.Contains(b[:n], []byte(text)) {
			return text
		}
	}
	return ""
}

// spec describes how to run one emulator.
type spec struct {
	name    string
	path    string
	args    func(port int) []string
	env     func(port int) []string
	dir     string
	logFile string
	port    int                                              // 0: choose a free one
	probe   func(ctx context.Context, endpoint string) error // one real request
	inUse   []string                                         // log texts meaning "port taken"
	fatal   []string                                         // log texts meaning "will never answer"
}

// start runs the emulator and waits until it answers a real request.
func start(ctx context.Context, s spec) (*Process, error) {
	path, err := exec.LookPath(s.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %s not found on PATH", s.name, s.path)
	}
	s.path = path
	if s.port != 0 {
		if err := checkPortFree(s.port); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		return startOnce(ctx, s, s.port)
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("%s: choose a free port: %w", s.name, err)
		}
		p, err := startOnce(ctx, s, port)
		var taken *portTakenError
		if errors.As(err, &taken) && attempt < freePortAttempts {
			continue // someone bound it between our check and the child's bind
		}
		return p, err
	}
}

type portTakenError struct{ err error }

func (e *portTakenError) Error() string { return e.err.Error() }
func (e *portTakenError) Unwrap() error { return e.err }

func startOnce(ctx context.Context, s spec, port int) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(s.logFile), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own copy
	args := s.args(port)
	fmt.Fprintf(logf, "\n=== %s: %s %s (dir %s)\n", time.Now().Format(time.RFC3339), s.path, strings.Join(args, " "), s.dir)
	logStart, err := logf.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}

	cmd := exec.Command(s.path, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), s.env(port)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own group: Stop signals the whole group, and a terminal's Ctrl-C
		// reaches the parent only, which then cleans up.
		Setpgid: true,
		// Killed even if the parent is SIGKILLed and cannot clean up.
		Pdeathsig: syscall.SIGKILL,
	}
	p := &Process{
		spec:     s,
		name:     s.name,
		endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		port:     port,
		logPath:  s.logFile,
		logStart: logStart,
		done:     make(chan struct{}),
	}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the forking *thread* exits, not the process.
		// Keep this thread for the child's lifetime: never unlocked, it is
		// discarded when this goroutine returns, after the child is reaped.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%s: start: %w", s.name, err)
	}
	if err := waitReady(ctx, s, p); err != nil {
		tailText := p.logTail()
		_ = p.Stop()
		for _, text := range s.inUse {
			if strings.Contains(tailText, text) {
				return nil, &portTakenError{fmt.Errorf("%s: port %d is already in use%s", s.name, port, tailText)}
			}
		}
		return nil, fmt.Errorf("%s: %w%s", s.name, err, tailText)
	}
	p.started = time.Now()
	return p, nil
}

func waitReady(ctx context.Context, s spec, p *Process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	fatal := append(append([]string(nil), s.inUse...), s.fatal...)
	var last error
	for {
		probeCtx, cancelProbe := context.WithTimeout(ctx, 2*time.Second)
		last = s.probe(probeCtx, p.endpoint)
		cancelProbe()
		// DynamoDB Local's JVM outlives a failed bind (only its main thread
		// dies): waiting for the exit would take the whole timeout. Checked
		// before trusting an answer too, which could come from whoever
		// holds the port.
		if text := p.logFind(fatal); text != "" {
			return fmt.Errorf("failed to start (log says %q)", text)
		}
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before answering (%v)", p.waitErr)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("no answer at %s within %s (last error: %v)", p.endpoint, readyTimeout, last)
			}
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort asks the kernel for a port free on all interfaces, where both
// emulators bind.
func freePort() (int, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func checkPortFree(port int) error {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("port %d is already in use (is another emulator or `make run` still running? `ss -ltnp 'sport = :%d'` shows who holds it)", port, port)
		}
		return fmt.Errorf("port %d: %w", port, err)
	}
	return l.Close()
}
