package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // the outputs are checked by decoding their headers
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "golang.org/x/image/webp"
)

// The enhance engine against libvips: infra/bench/enhancecli (the engine on
// a file, as the worker runs it, output streamed to a file) and `vips
// resize IN OUT SCALE --kernel lanczos3` on the same synthetic photos
// (JPEG, quality 90, generated once into .local/bench/), each a whole
// process timed by /usr/bin/time -v (elapsed, maximum resident set), runs
// interleaved so that other load on the machine weighs on both alike.

type enhanceCase struct {
	src, side int    // a src x src JPEG to side x side
	format    string // jpg, png, webp
	// runs of each tool; the table shows their medians. The short cases
	// run more often: a burst of other work skews one run of a second.
	runs int
}

var enhanceCases = []enhanceCase{
	{1024, 4096, "jpg", 5},
	{4000, 16000, "jpg", 3},
	{4000, 22000, "jpg", 3},
	{1024, 4096, "png", 5},
	{1024, 4096, "webp", 3},
}

// vipsOptions makes libvips write what the engine writes: JPEG at quality
// 90, PNG at zlib level 1 (its fastest; ours deflates at level 4 of
// klauspost/compress, stripenc.pngLevel), lossless WebP.
var vipsOptions = map[string]string{"jpg": "[Q=90]", "png": "[compression=1]", "webp": "[lossless]"}

// toolRun is one process's figures.
type toolRun struct {
	wall time.Duration
	rss  int64 // bytes
	err  error
}

// enhanceResult is one case's runs of each tool.
type enhanceResult struct {
	c                 enhanceCase
	plain, full, vips []toolRun // ours with filters off, ours with the defaults, libvips
}

// measureEnhance builds enhancecli, makes the inputs and runs every case.
// vipsErr says why libvips could not run, if it could not.
func measureEnhance(root, tmp string) (results []enhanceResult, vipsErr error, err error) {
	cli := filepath.Join(tmp, "enhancecli")
	build := exec.Command("go", "build", "-trimpath", "-o", cli, "./infra/bench/enhancecli")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("go build enhancecli: %w\n%s", err, out)
	}
	vipsErr = ensureVips()
	inputs := map[int]string{}
	for _, c := range enhanceCases {
		if inputs[c.src], err = benchPhoto(root, c.src); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range enhanceCases {
		fmt.Fprintf(os.Stderr, "bench: enhance %d² → %d² %s, %d runs each...\n", c.src, c.side, c.format, c.runs)
		in, out := inputs[c.src], filepath.Join(tmp, "out."+c.format)
		size := strconv.Itoa(c.side)
		res := enhanceResult{c: c}
		for range c.runs {
			res.plain = append(res.plain, timed(c, out, cli, "-filters", "off", in, out, size, size))
			if vipsErr == nil {
				scale := strconv.FormatFloat(float64(c.side)/float64(c.src), 'f', -1, 64)
				res.vips = append(res.vips, timed(c, out, "vips", "resize", in, out+vipsOptions[c.format], scale, "--kernel", "lanczos3"))
			}
			res.full = append(res.full, timed(c, out, cli, in, out, size, size))
		}
		results = append(results, res)
	}
	return results, vipsErr, nil
}

// ensureVips installs Debian's libvips-tools when vips is missing (the
// bench runs as root on these machines).
func ensureVips() error {
	if _, err := exec.LookPath("vips"); err == nil {
		return nil
	}
	fmt.Fprintln(os.Stderr, "bench: installing libvips-tools...")
	cmd := exec.Command("apt-get", "install", "-y", "libvips-tools")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install libvips-tools: %w: %s", err, firstLine(lastLine(string(out))))
	}
	_, err := exec.LookPath("vips")
	return err
}

// benchPhoto is the path of the side x side photo JPEG, made if missing.
func benchPhoto(root string, side int) (string, error) {
	path := filepath.Join(root, ".local", "bench", fmt.Sprintf("photo-%d.jpg", side))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	data, err := photoJPEG(side)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, data, 0o644)
}

// timed runs a command under /usr/bin/time -v (or, without it, measures it
// itself: wall clock and getrusage's peak, what time -v reports), checks
// that it wrote out at c's size, and removes out.
func timed(c enhanceCase, out string, name string, args ...string) toolRun {
	defer os.Remove(out)
	var run toolRun
	_, noTime := os.Stat(gnuTime)
	cmd := exec.Command(gnuTime, append([]string{"-v", name}, args...)...)
	if noTime != nil {
		cmd = exec.Command(name, args...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		run.err = fmt.Errorf("%s: %w: %s", name, err, firstLine(stderr.String()))
		return run
	}
	if noTime != nil {
		run.wall = time.Since(t0)
		run.rss, run.err = maxRSS(cmd.ProcessState)
	} else {
		run.wall, run.rss, run.err = parseTimeV(stderr.String())
	}
	if run.err == nil {
		run.err = checkOutput(out, c)
	}
	return run
}

const gnuTime = "/usr/bin/time"

// parseTimeV reads GNU time's elapsed time and maximum resident set size.
func parseTimeV(s string) (wall time.Duration, rss int64, err error) {
	sc := bufio.NewScanner(strings.NewReader(s))
	found := 0
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), ": ")
		switch {
		case !ok:
		case strings.HasPrefix(key, "Elapsed (wall clock) time"):
			var secs float64
			for _, part := range strings.Split(value, ":") { // [h:]m:ss.ss
				v, perr := strconv.ParseFloat(part, 64)
				if perr != nil {
					return 0, 0, fmt.Errorf("time -v: elapsed %q", value)
				}
				secs = secs*60 + v
			}
			wall, found = time.Duration(secs*float64(time.Second)), found+1
		case key == "Maximum resident set size (kbytes)":
			kib, perr := strconv.ParseInt(value, 10, 64)
			if perr != nil {
				return 0, 0, fmt.Errorf("time -v: maximum resident set %q", value)
			}
			rss, found = kib<<10, found+1
		}
	}
	if found != 2 {
		return 0, 0, errors.New("time -v printed no elapsed time or maximum resident set")
	}
	return wall, rss, nil
}

// checkOutput reads the output's header: it must be c's format and size.
func checkOutput(path string, c enhanceCase) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	if err != nil {
		return fmt.Errorf("the output does not decode: %w", err)
	}
	want := map[string]string{"jpg": "jpeg", "png": "png", "webp": "webp"}[c.format]
	if format != want || cfg.Width != c.side || cfg.Height != c.side {
		return fmt.Errorf("the output is a %dx%d %s, want %dx%d %s", cfg.Width, cfg.Height, format, c.side, c.side, want)
	}
	return nil
}

// median is the middle run of the successful ones; ok is false if any failed.
func median(runs []toolRun) (wall time.Duration, rss int64, err error) {
	var walls []time.Duration
	var rsses []int64
	for _, r := range runs {
		if r.err != nil {
			return 0, 0, r.err
		}
		walls, rsses = append(walls, r.wall), append(rsses, r.rss)
	}
	if len(walls) == 0 {
		return 0, 0, errors.New("no runs")
	}
	slices.Sort(walls)
	slices.Sort(rsses)
	return walls[len(walls)/2], rsses[len(rsses)/2], nil
}

// enhanceTable prints the comparison.
func enhanceTable(results []enhanceResult, vipsErr error, loadBefore, loadAfter string, workerMB int) (*table, bool) {
	t := newTable(
		column{title: "CASE"},
		column{title: "TOOL"},
		column{title: "WALL (MEDIAN)", right: true},
		column{title: "PEAK RSS (MEDIAN)", right: true},
		column{title: "TIME VS LIBVIPS", right: true},
		column{title: "RSS VS LIBVIPS", right: true},
		column{title: "RUNS"},
	)
	failed := false
	for i, res := range results {
		if i > 0 {
			t.sep()
		}
		c := res.c
		name := fmt.Sprintf("%d² → %d² %s", c.src, c.side, c.format)
		vw, vr, verr := median(res.vips)
		if vipsErr != nil {
			verr = vipsErr
		}
		row := func(tool string, runs []toolRun, vs bool) {
			w, r, err := median(runs)
			if err != nil {
				if tool != "libvips" {
					failed = true
				}
				t.add(name, tool, "", "", "", "", "FAIL: "+firstLine(err.Error()))
				return
			}
			ratioT, ratioR := "", ""
			if vs && verr == nil {
				ratioT = fmt.Sprintf("%.2fx", w.Seconds()/vw.Seconds())
				ratioR = fmt.Sprintf("%.2fx", float64(r)/float64(vr))
			}
			t.add(name, tool, fmt.Sprintf("%.2f s", w.Seconds()), mebibytes(r), ratioT, ratioR, runList(runs))
		}
		row("ours, filters 0", res.plain, true)
		row("libvips", res.vips, false)
		row("ours, default filters", res.full, true)
	}
	t.note("ours: infra/bench/enhancecli, enhance.Engine with the request as the API stores it, the file written through Job.Outputs;")
	t.note("  filters 0 = sharpen, denoise and fix_compression at 0 (the plain Lanczos-3 resample vips resize does), default filters = 0.5 each.")
	t.note("libvips: vips resize IN OUT SCALE --kernel lanczos3, JPEG Q=90, PNG compression=1 (ours: deflate level 4, stripenc.pngLevel), WebP lossless (ours is).")
	t.note("inputs: synthetic photos, JPEG quality 90 4:2:0, in .local/bench/; each process timed by /usr/bin/time -v; the runs of a case interleaved.")
	if workerMB > 0 {
		t.note("the worker's MemorySize (template.yaml): %d MB (Lambda's MB are MiB).", workerMB)
	}
	t.note("machine: %d CPUs (GOMAXPROCS %d); 1-minute load average %s before, %s after: other work skews both tools alike, compare ratios.",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), loadBefore, loadAfter)
	return t, failed
}

func runList(runs []toolRun) string {
	var parts []string
	for _, r := range runs {
		parts = append(parts, fmt.Sprintf("%.2f s/%s", r.wall.Seconds(), mebibytes(r.rss)))
	}
	return strings.Join(parts, ", ")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
