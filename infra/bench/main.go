// Command bench is `make bench`: in one run it measures, and prints as one
// table,
//
//   - the size of each function's deployed binary (linux/arm64, the
//     Makefile's flags), against the 12 MB limit (the worker: 16 MB);
//   - each function's cold start: exec to its first GET .../invocation/next
//     under a fake Lambda Runtime API, and its first invocation's round trip,
//     next to a bare binary that only builds the SDK clients;
//   - job creation through the local API (DynamoDB Local, fauxqs, the
//     gateway and the handlers of `make run`), next to raw PutItem calls of
//     the same item: the write ceiling of DynamoDB Local on this machine.
//
// It exits non-zero if a binary is over the limit or any request or
// invocation did not answer as expected. All traffic is on 127.0.0.1.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"genjobs/infra/local/emulator"
)

const (
	// sizeLimit is the limit on a deployed binary: under 12 MB; the
	// worker, which carries the image codecs and engines, under 16 MB
	// (the Makefile's sizes target checks the same).
	sizeLimit       = 12_000_000
	workerSizeLimit = 16_000_000
	// coldRuns is the number of measured starts per binary.
	coldRuns = 20
)

func main() {
	begin := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, begin)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, begin time.Time) error {
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "genjobs-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// Other work on the machine skews every number here: say how busy it was.
	loadBefore := loadAverage()

	ts, err := targets(root)
	if err != nil {
		return err
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	fmt.Fprintf(os.Stderr, "bench: building %d binaries for linux/arm64 and %s...\n", len(ts), host)
	deployed, hostBins, err := buildAll(root, tmp, ts)
	if err != nil {
		return err
	}
	size, err := sizes(deployed)
	if err != nil {
		return err
	}
	// Cold starts run before the emulators start, so that nothing of ours
	// competes with them for the CPUs.
	fmt.Fprintf(os.Stderr, "bench: %d cold starts per binary...\n", coldRuns)
	cold, err := measureColdStarts(root, ts, hostBins, coldRuns)
	if err != nil {
		return err
	}
	loadAtLoad := loadAverage()
	fmt.Fprintln(os.Stderr, "bench: starting DynamoDB Local and fauxqs...")
	load, err := measureLoad(ctx, root, tmp)
	if err != nil {
		return err
	}

	r := &report{t: newReportTable(), host: host}
	r.sizes(ts, size)
	r.t.sep()
	r.coldStarts(ts, cold)
	r.t.sep()
	r.load(load)
	r.footnotes(loadBefore, loadAtLoad)
	r.t.note("make bench took %.1f s.", time.Since(begin).Seconds())
	r.t.print(os.Stdout)
	if r.failed {
		return errors.New("some checks failed (see the table)")
	}
	return nil
}

// loadAverage is the machine's 1-minute load average (Linux), or "n/a".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "n/a"
	}
	return f[0]
}
