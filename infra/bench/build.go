package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// deployFlags are the deployed build's flags, as the Makefile's LAMBDA_FLAGS
// and template.yaml's makefile build use them: no RPC shim, no file paths,
// no symbol table or DWARF.
var deployFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w"}

// barePkg is the baseline: the SDK clients and lambda.Start, nothing of ours.
const (
	bareName = "bare"
	barePkg  = "./infra/bench/bare"
)

// target is one program the bench measures.
type target struct {
	name string // functions/<name>, or "bare"
	pkg  string // import path relative to the repository root
}

// targets lists the functions under functions/ (every directory with a
// main.go), sorted by name, then the bare baseline.
func targets(root string) ([]target, error) {
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		return nil, err
	}
	var ts []target
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "functions", e.Name(), "main.go")); err != nil {
			continue
		}
		ts = append(ts, target{name: e.Name(), pkg: "./functions/" + e.Name()})
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("no functions under %s/functions", root)
	}
	slices.SortFunc(ts, func(a, b target) int { return strings.Compare(a.name, b.name) })
	return append(ts, target{name: bareName, pkg: barePkg}), nil
}

// build compiles every target for goos/goarch with the deployed flags into
// dir, in one go command so that the packages they share compile once. It
// returns each target's binary path by name.
func build(root, dir, goos, goarch string, ts []target) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := append([]string{"build"}, deployFlags...)
	// With several packages, -o names a directory: each binary gets its
	// package directory's name.
	args = append(args, "-o", dir+string(filepath.Separator))
	for _, t := range ts {
		args = append(args, t.pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build for %s/%s: %w\n%s", goos, goarch, err, out)
	}
	bins := map[string]string{}
	for _, t := range ts {
		bins[t.name] = filepath.Join(dir, filepath.Base(t.pkg))
	}
	return bins, nil
}

// sizes returns each binary's size in bytes.
func sizes(bins map[string]string) (map[string]int64, error) {
	out := map[string]int64{}
	for name, path := range bins {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		out[name] = fi.Size()
	}
	return out, nil
}

// buildAll builds the deployed linux/arm64 binaries (measured for size) and
// binaries for this machine (run for cold starts). On a linux/arm64 machine
// they are the same build.
func buildAll(root, tmp string, ts []target) (deployed, host map[string]string, err error) {
	deployed, err = build(root, filepath.Join(tmp, "linux-arm64"), "linux", "arm64", ts)
	if err != nil {
		return nil, nil, err
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "arm64" {
		return deployed, deployed, nil
	}
	host, err = build(root, filepath.Join(tmp, runtime.GOOS+"-"+runtime.GOARCH), runtime.GOOS, runtime.GOARCH, ts)
	return deployed, host, err
}
