package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What GNU time -v prints after a run.
const timeV = `	Command being timed: "enhancecli in.jpg out.jpg 4096 4096"
	User time (seconds): 2.10
	System time (seconds): 0.12
	Percent of CPU this job got: 145%
	Elapsed (wall clock) time (h:mm:ss or m:ss): 0:01.53
	Average shared text size (kbytes): 0
	Maximum resident set size (kbytes): 204800
	Exit status: 0
`

// The enhance table's wall time and peak RSS come from time -v.
func TestParseTimeVReadsWallTimeAndPeakRSS(t *testing.T) {
	wall, rss, err := parseTimeV(timeV)
	if err != nil || wall != 1530*time.Millisecond || rss != 204800<<10 {
		t.Errorf("parseTimeV = %v, %d, %v; want 1.53s, %d", wall, rss, err, 204800<<10)
	}
	long := strings.Replace(timeV, "0:01.53", "1:02:03.50", 1)
	if wall, _, err := parseTimeV(long); err != nil || wall != time.Hour+2*time.Minute+3500*time.Millisecond {
		t.Errorf("h:mm:ss: %v, %v", wall, err)
	}
	for name, text := range map[string]string{
		"no peak RSS":  strings.Replace(timeV, "Maximum resident set size (kbytes): 204800\n", "", 1),
		"no wall time": strings.Replace(timeV, "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:01.53\n", "", 1),
		"a bad time":   strings.Replace(timeV, "0:01.53", "0:a1.53", 1),
		"a bad RSS":    strings.Replace(timeV, "204800", "204 MB", 1),
		"nothing":      "",
	} {
		if _, _, err := parseTimeV(text); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func runsOf(secs ...float64) []toolRun {
	var out []toolRun
	for _, s := range secs {
		out = append(out, toolRun{wall: time.Duration(s * float64(time.Second)), rss: int64(s * 100 * (1 << 20))})
	}
	return out
}

// The table's figures are medians (of an even count, the upper middle); one
// failed run makes the whole case fail.
func TestMedianOfTheRuns(t *testing.T) {
	if w, r, err := median(runsOf(3, 1, 2)); err != nil || w != 2*time.Second || r != 200<<20 {
		t.Errorf("median of 3 = %v, %d, %v", w, r, err)
	}
	if w, _, _ := median(runsOf(4, 1, 3, 2)); w != 3*time.Second {
		t.Errorf("median of 4 = %v, want the upper middle 3s", w)
	}
	runs := runsOf(1, 2)
	runs[1].err = errString("the output is a 10x10 png, want 4096x4096 png")
	if _, _, err := median(runs); err == nil || !strings.Contains(err.Error(), "10x10") {
		t.Errorf("a failed run: %v", err)
	}
	if _, _, err := median(nil); err == nil {
		t.Error("no runs: no error")
	}
}

// Each of our rows is compared with libvips; libvips failing is a note, our
// engine failing fails the bench.
func TestEnhanceTableComparesWithLibvips(t *testing.T) {
	res := enhanceResult{c: enhanceCase{src: 1024, side: 4096, format: "jpg"},
		plain: runsOf(2, 2, 2), vips: runsOf(1, 1, 1), full: runsOf(4, 4, 4)}
	tb, failed := enhanceTable([]enhanceResult{res}, nil, "0.5", "0.7", 3008)
	if failed {
		t.Fatal("good runs failed")
	}
	want := [][]string{
		{"1024² → 4096² jpg", "ours, filters 0", "2.00 s", "200 MiB", "2.00x", "2.00x", "2.00 s/200 MiB, 2.00 s/200 MiB, 2.00 s/200 MiB"},
		{"1024² → 4096² jpg", "libvips", "1.00 s", "100 MiB", "", "", "1.00 s/100 MiB, 1.00 s/100 MiB, 1.00 s/100 MiB"},
		{"1024² → 4096² jpg", "ours, default filters", "4.00 s", "400 MiB", "4.00x", "4.00x", "4.00 s/400 MiB, 4.00 s/400 MiB, 4.00 s/400 MiB"},
	}
	if strings.Join(flat(tb.rows), "|") != strings.Join(flat(want), "|") {
		t.Errorf("rows:\n%q\nwant\n%q", tb.rows, want)
	}
	if !strings.Contains(strings.Join(tb.notes, "\n"), "the worker's MemorySize (template.yaml): 3008 MB") {
		t.Errorf("notes do not name the worker's memory: %q", tb.notes)
	}

	noVips := res
	noVips.vips = nil // measureEnhance runs no vips without it
	tb, failed = enhanceTable([]enhanceResult{noVips}, errString("apt-get install libvips-tools: exit status 100"), "", "", 0)
	if failed || tb.rows[0][4] != "" || tb.rows[1][6] != "FAIL: no runs" {
		t.Errorf("without libvips: failed %v, rows %q", failed, tb.rows)
	}
	res.full[1].err = errString("enhancecli: exit status 2")
	if _, failed := enhanceTable([]enhanceResult{res}, nil, "", "", 0); !failed {
		t.Error("a failed run of ours did not fail the table")
	}
}

func flat(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(r, ";"))
	}
	return out
}

// Each run's output must decode as the case's format and size.
func TestCheckOutputDecodesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.png")
	if err := os.WriteFile(path, encoded(t, 8, 8, "png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkOutput(path, enhanceCase{side: 8, format: "png"}); err != nil {
		t.Errorf("a good output: %v", err)
	}
	for _, c := range []enhanceCase{{side: 16, format: "png"}, {side: 8, format: "jpg"}} {
		if err := checkOutput(path, c); err == nil || !strings.Contains(err.Error(), "the output is a 8x8 png") {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := checkOutput(filepath.Join(t.TempDir(), "none.png"), enhanceCase{side: 8, format: "png"}); err == nil {
		t.Error("a missing output passed")
	}
}

func TestLastLine(t *testing.T) {
	if got := lastLine("Reading...\nE: Unable to locate package libvips-tools\n\n"); got != "E: Unable to locate package libvips-tools" {
		t.Errorf("lastLine = %q", got)
	}
}
