package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/engine"
)

// engineChildCmd is the hidden subcommand the bench re-runs itself with to
// measure the enhance engine alone in a process of its own:
//
//	bench engine-child SRC.png FORMAT SIDE
//
// It runs engine.Enhance on the PNG at SRC with a default request for a
// SIDE x SIDE output in FORMAT, and prints an engineChildResult as JSON.
// SIDE 0 only reads the source and builds the request: the floor of the
// process.
const engineChildCmd = "engine-child"

// The engine runs measured: the largest output the worker's budget is sized
// for, in the fastest and the slowest format to encode.
const engineSide = 4096

var engineFormats = []string{"jpg", "png"}

// engineChildResult is what a child reports of itself.
type engineChildResult struct {
	WallNS   int64  `json:"wall_ns"`   // engine.Enhance.Run, start to end
	HeapPeak uint64 `json:"heap_peak"` // most live heap seen, sampled every 2 ms
	OutBytes int    `json:"out_bytes"` // the output file
}

// engineRun is one child process, as the parent saw it.
type engineRun struct {
	format  string
	side    int
	maxRSS  int64         // peak resident set, bytes (getrusage)
	elapsed time.Duration // exec to exit
	res     engineChildResult
	err     error
}

// measureEngine runs the floor child, then one child per format.
func measureEngine(srcPath string) (floor engineRun, runs []engineRun) {
	floor = runEngineChild(srcPath, "jpg", 0)
	for _, f := range engineFormats {
		runs = append(runs, runEngineChild(srcPath, f, engineSide))
	}
	return floor, runs
}

func runEngineChild(srcPath, format string, side int) engineRun {
	run := engineRun{format: format, side: side}
	self, err := os.Executable()
	if err != nil {
		run.err = err
		return run
	}
	cmd := exec.Command(self, engineChildCmd, srcPath, format, strconv.Itoa(side))
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err = cmd.Run()
	run.elapsed = time.Since(t0)
	if err != nil {
		run.err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
		return run
	}
	if run.maxRSS, err = maxRSS(cmd.ProcessState); err != nil {
		run.err = err
		return run
	}
	if err := json.Unmarshal(stdout.Bytes(), &run.res); err != nil {
		run.err = fmt.Errorf("child output %q: %w", stdout.String(), err)
	}
	return run
}

// childEnv is the bench's environment without the Go runtime's memory
// settings: the child runs with the defaults the worker runs with.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			env = append(env, kv)
		}
	}
	return env
}

// engineChild is the child's side of engineChildCmd; it returns the exit
// code.
func engineChild(args []string) int {
	res, err := runEngine(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench engine-child:", err)
		return 1
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

func runEngine(args []string) (engineChildResult, error) {
	var res engineChildResult
	if len(args) != 3 {
		return res, errors.New("usage: bench engine-child SRC.png FORMAT SIDE")
	}
	side, err := strconv.Atoi(args[2])
	if err != nil || side < 0 {
		return res, fmt.Errorf("SIDE %q is not a size in pixels", args[2])
	}
	src, err := os.ReadFile(args[0])
	if err != nil {
		return res, err
	}
	// The request as the API stores it: validated, the schema's defaults
	// filled (every filter at 0.5), so the child does what the worker does.
	cat, err := catalog.New()
	if err != nil {
		return res, err
	}
	ep, ok := cat.Lookup("enhance", "vendor-a", "standard-enhance")
	if !ok {
		return res, errors.New("the catalog has no standard-enhance endpoint")
	}
	body, _ := json.Marshal(map[string]any{
		"width": max(side, 1), "height": max(side, 1), "image_url": "https://example.com/photo.png",
		"model": "Standard V2", "output_format": args[1],
	})
	req, err := ep.Decode(body, time.Now())
	if err != nil {
		return res, fmt.Errorf("request: %w", err)
	}
	if side == 0 {
		return res, nil
	}
	j := engine.Job{
		Model:   "standard-enhance",
		Request: req.JSON(),
		Inputs:  []engine.Input{{Field: "image_url", ContentType: "image/png", Data: src}},
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { res.HeapPeak = sampleHeap(stop) })
	t0 := time.Now()
	files, err := engine.Enhance{}.Run(context.Background(), j, func(engine.Update) error { return nil })
	res.WallNS = int64(time.Since(t0))
	close(stop)
	wg.Wait()
	if err != nil {
		return res, err
	}
	if len(files) != 1 {
		return res, fmt.Errorf("the engine gave %d files, want 1", len(files))
	}
	res.OutBytes = len(files[0].Data)
	return res, nil
}

// sampleHeap returns the most live heap seen every 2 ms until stop closes.
// runtime/metrics reads without stopping the world, unlike ReadMemStats.
func sampleHeap(stop <-chan struct{}) uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var peak uint64
	for {
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			peak = max(peak, s[0].Value.Uint64())
		}
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}
