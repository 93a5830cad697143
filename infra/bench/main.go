// Command bench is `make bench`: in one run it measures, and prints as one
// table,
//
//   - the size of each function's deployed binary (linux/arm64, the
//     Makefile's flags), against the 12 MB limit (the worker: 16 MB);
//   - each function's cold start: exec to its first GET .../invocation/next
//     under a fake Lambda Runtime API, and its first invocation's round trip,
//     next to a bare binary that only builds the SDK clients;
//   - the enhance engine against libvips (enhance.go): whole processes on
//     the same photos, 1024² -> 4096² and 4000² -> 16000² and 22000² JPEG,
//     4096² PNG and WebP, wall time and peak RSS side by side, in a table
//     of its own (`go run ./infra/bench enhance` prints just that one);
//   - job creation through the local API (DynamoDB Local, fauxqs, the
//     gateway and the handlers of `make run`), next to raw PutItem calls of
//     the same item: the write ceiling of DynamoDB Local on this machine,
//     and raw TransactWriteItems of a creation's four writes (`go run
//     ./infra/bench creation` prints just those rows);
//   - jobs run to the end on the local stack (a table, queue and buckets of
//     their own), the worker and the sweeper played from template.yaml by
//     triggers.Start as `make run` plays them: a synthetic 1024x1024 photo
//     is uploaded by POST /assets, then the queue's latency, one job at a
//     time on an idle queue (from the creation's answer to the worker's
//     handler receiving the message, and to DynamoDB acknowledging the
//     worker's first status write), and 1024x1024 -> 2048x2048 jpg enhance
//     jobs from the creation's answer to GET /jobs/{id} showing them
//     completed, with their rate; one result is downloaded and must decode
//     as a 2048x2048 JPEG;
//   - the cost of a million jobs (cost.go) for three mixes (small enhance,
//     16K enhance, a 10 s video), from the DynamoDB units the queue
//     phase's jobs consumed, as DynamoDB Local reported them
//     (ReturnConsumedCapacity) and as AWS would bill them by its
//     documented rules (dynamorules.go, awsbill.go), their S3 and SQS
//     requests, the worker's measured run times and the memory
//     template.yaml gives, and of a webhook (the notifier's and deliverer's
//     invocations, KMS Sign, SQS, DynamoDB), with a dated price table
//     (`go run ./infra/bench cost` runs just the job runs, the webhooks and
//     the video engine, and prints those rows);
//   - GET /styles?filter=all through the local API over 10,000 styles
//     (styles.go), on emulators of its own, after a full walk of its pages
//     is checked to show each visible style once;
//   - the console's jobs pages (jobspages.go), on emulators of their own:
//     /app/jobs over 10,000 jobs of a workspace (walking its pages, and by
//     person; p50 under 30 ms and at most 2 table reads a page beyond the
//     session's), a job's page and the poll route (reading only the running
//     jobs it names), signed in through the console; and job creation
//     billed in compute units through the generate handler in process (a
//     person's httpapi.Origin, the application's path) against raw
//     TransactWriteItems of the same items, at least 0.9x (`go run
//     ./infra/bench jobs` runs just these rows);
//   - MCP over OAuth (oauthmcp.go), on emulators of its own: get_job
//     through /mcp with an OAuth access token and with an API token,
//     interleaved one for one, the first's p50 at most 1.2x the second's;
//     and the token endpoint's code exchanges and refreshes, p50 under 50
//     ms (`go run ./infra/bench oauth` runs just these rows);
//   - a soak (soak.go): make run's runner, built and started on free
//     loopback ports with its data in a directory of its own, takes a fixed
//     rate of mixed creations and reads (-soak-rate, 50 a second) for a
//     bounded time (-soak, 60 s; 0 skips it), open loop; p50 and p99 per kind
//     of request, the answers by status, and the resident memory of the
//     runner and of its two emulators before, during and after the load.
//     -soak-only runs it alone.
//
// The load and the job runs each use a workspace of their own whose limits
// keep the numbers free of 429s and backlog waits.
//
// The engine runs before the emulators start and the cold starts before
// both, so that nothing of ours competes with them for the CPUs. It exits
// non-zero if a binary is over the limit, any request, invocation or job did
// not answer or end as expected, or the result is not what was asked. All
// traffic is on 127.0.0.1; the table notes the machine's load average.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/internal/emulator"
)

const (
	// sizeLimit is the limit on a deployed binary: under 12 MB; the
	// worker, which carries the image codecs and engines, under 16 MB
	// (the Makefile's sizes target checks the same).
	sizeLimit       = 12_000_000
	workerSizeLimit = 16_000_000
	// The deliverer carries the KMS client and the JWT code besides the
	// DynamoDB, SQS and S3 clients, the provider and callbacks functions
	// the Secrets Manager client and the provider adapters, the mcp function
	// the generate, jobs, usage and styles handlers and the MCP SDK (the
	// Makefile's sizes target agrees).
	delivererSizeLimit = 13_000_000
	// The console links the Cognito client, stripe-go and the playground's
	// creation path (docs/performance.md; the Makefile agrees).
	consoleSizeLimit = 15_000_000
	// minSpare is what every function keeps free of its limit (the
	// Makefile's MIN_SPARE_BYTES): a dependency's growth shows before a
	// deploy breaks.
	minSpare = 1_000_000
	// coldRuns is the number of measured starts per binary.
	coldRuns = 20
	// maxColdRatio bounds each function's median cold start as a multiple
	// of bare's, measured in the same run (docs/performance.md).
	maxColdRatio = 1.3
)

// soakOptions are the flags of the soak.
type soakOptions struct {
	d    time.Duration
	rate int
	only bool
}

// subcommands run one part of the bench alone; without one, every measure
// runs and the soak's flags apply.
var subcommands = []string{"enhance", "starts", "creation", "cost", "styles", "jobs", "oauth"}

// errSoakFlags: the soak's flags are out of range.
var errSoakFlags = errors.New("-soak must be a positive duration (0 for none, not with -soak-only) and -soak-rate 1..1000")

// parseArgs reads the command line (without the program's name): a
// subcommand, which takes no flags, or the soak's flags. A flag it cannot
// parse is reported to stderr with the usage (flag.ErrHelp for -h).
func parseArgs(args []string, stderr io.Writer) (sub string, so soakOptions, err error) {
	if len(args) > 0 && slices.Contains(subcommands, args[0]) {
		return args[0], so, nil
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&so.d, "soak", defaultSoakFor, "how long the soak sends its fixed rate of requests to make run's runner (0: no soak)")
	fs.IntVar(&so.rate, "soak-rate", defaultSoakRate, "the soak's requests per second")
	fs.BoolVar(&so.only, "soak-only", false, "run the soak alone")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: bench [flags]   every measure, one table (make bench)
       bench enhance    the enhance engine against libvips
       bench starts     binary sizes and cold starts
       bench creation   job creation through the local API, and DynamoDB Local's ceiling
       bench cost       job runs, webhooks and the cost of a million jobs (DynamoDB by Local's count and by AWS's rules)
       bench styles     GET /styles?filter=all over 10,000 styles, after a walk of every page
       bench jobs       the console's jobs pages over 10,000 jobs, the poll route, creation in compute units
       bench oauth      an MCP tool call with an OAuth access token beside an API token; the token endpoint
flags:`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return "", so, err
	}
	if so.d < 0 || so.rate < 1 || so.rate > 1000 || (so.only && so.d == 0) {
		return "", so, errSoakFlags
	}
	return "", so, nil
}

func main() {
	sub, so, err := parseArgs(os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errSoakFlags):
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	case err != nil:
		os.Exit(2) // the flag package said why, with the usage
	}
	if path := os.Getenv("BENCH_CPUPROFILE"); path != "" {
		// What the bench process itself spends (the local API, the worker,
		// the engines in process): go tool pprof on the file.
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: BENCH_CPUPROFILE:", err)
			os.Exit(2)
		}
	}
	begin := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = inWorkdir(func(root, tmp string) error {
		switch {
		case sub == "enhance":
			return runEnhance(root, tmp)
		case sub == "starts":
			return runStarts(root, tmp)
		case sub == "creation":
			return runCreation(ctx, root, tmp)
		case sub == "cost":
			return runCost(ctx, root, tmp, begin)
		case sub == "styles":
			return runStyles(ctx, root)
		case sub == "jobs":
			return runJobsPages(ctx, root)
		case sub == "oauth":
			return runOAuthMCP(ctx, root)
		case so.only:
			return runSoakOnly(ctx, root, tmp, begin, so)
		}
		return run(ctx, root, tmp, begin, so)
	})
	stop()
	// Stopped here, not deferred: os.Exit below would skip a deferred
	// stop and leave the profile empty, and a failed run is the one to
	// look into.
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// inWorkdir runs fn with the repository's root and a temporary directory
// that is removed after it.
func inWorkdir(fn func(root, tmp string) error) error {
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "genjobs-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	return fn(root, tmp)
}

func run(ctx context.Context, root, tmp string, begin time.Time, so soakOptions) error {
	// Other work on the machine skews every number here: say how busy it was.
	loadBefore := loadAverage()

	// Cold starts run before the emulators start, so that nothing of ours
	// competes with them for the CPUs.
	ts, size, cold, err := measureStarts(root, tmp)
	if err != nil {
		return err
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	src, err := photoPNG(photoSide)
	if err != nil {
		return err
	}
	enhance, enhanceFailed, enhanced, err := enhanceSection(root, tmp)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: a 10 s video through the video engine...")
	video, videoErr := videoRunTime(ctx)

	signs := measureSigning(ctx, root)

	loadAtLoad := loadAverage()
	fmt.Fprintln(os.Stderr, "bench: starting DynamoDB Local and fauxqs...")
	load, runs, hooks, err := measureStack(ctx, root, tpl, src, tmp)
	if err != nil {
		return err
	}
	styles, err := measureStylesStack(ctx, root, tpl) // styles.go
	if err != nil {
		return err
	}
	jobsPages, err := measureJobsStack(ctx, root, tpl) // jobspages.go
	if err != nil {
		return err
	}
	var oauth *oauthReport
	err = withStack(ctx, root, "bench-oauth-", func(local *devstack.Stack) error { // oauthmcp.go
		oauth, err = measureOAuthMCP(ctx, tpl, local)
		return err
	})
	if err != nil {
		return err
	}
	var soak *soakReport
	if so.d > 0 {
		fmt.Fprintf(os.Stderr, "bench: soak of make run's runner, %d req/s for %s...\n", so.rate, so.d)
		soak = measureSoak(ctx, root, tmp, so.d, so.rate) // soak.go
	}

	r := &report{t: newReportTable(), host: host}
	r.sizes(ts, size)
	r.t.sep()
	r.coldStarts(ts, cold)
	r.t.sep()
	r.load(load)
	r.t.sep()
	r.runs(runs)
	r.t.sep()
	r.costs(runs, hooks.usage, functionMemory(tpl, "SweeperFunction"), costMixes(tpl, runs.usage, enhanced, video, videoErr))
	r.t.sep()
	r.styles(styles)
	r.t.sep()
	r.jobsPages(jobsPages)
	r.t.sep()
	r.oauthMCP(oauth)
	r.t.sep()
	r.webhooks(hooks)
	r.signing(signs)
	if soak != nil {
		r.t.sep()
		r.soak(soak)
	}
	r.footnotes(len(src), loadBefore, loadAtLoad, runs.loadAvg)
	if soak != nil {
		r.soakFootnotes(soak)
	}
	r.t.note("make bench took %.1f s.", time.Since(begin).Seconds())
	r.t.print(os.Stdout)
	fmt.Println()
	enhance.print(os.Stdout)
	if r.failed || enhanceFailed {
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

// runStarts is `go run ./infra/bench starts`: the binaries' sizes and cold
// starts alone.
func runStarts(root, tmp string) error {
	ts, size, cold, err := measureStarts(root, tmp)
	if err != nil {
		return err
	}
	r := &report{t: newReportTable(), host: runtime.GOOS + "/" + runtime.GOARCH}
	r.sizes(ts, size)
	r.t.sep()
	r.coldStarts(ts, cold)
	r.t.note("load average %s.", loadAverage())
	r.t.print(os.Stdout)
	if r.failed {
		return errors.New("some checks failed (see the table)")
	}
	return nil
}

// measureStarts builds every function and bare for linux/arm64 (and this
// host, to run them), and measures the deployed binaries' sizes and, on this
// host, their cold starts.
func measureStarts(root, tmp string) ([]target, map[string]int64, map[string]*coldStats, error) {
	ts, err := targets(root)
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "bench: building %d binaries for linux/arm64 and %s/%s...\n", len(ts), runtime.GOOS, runtime.GOARCH)
	deployed, hostBins, err := buildAll(root, tmp, ts)
	if err != nil {
		return nil, nil, nil, err
	}
	size, err := sizes(deployed)
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "bench: %d cold starts per binary...\n", coldRuns)
	cold, err := measureColdStarts(root, ts, hostBins, coldRuns)
	if err != nil {
		return nil, nil, nil, err
	}
	return ts, size, cold, nil
}

// runEnhance is `go run ./infra/bench enhance`: the engine against libvips
// alone.
func runEnhance(root, tmp string) error {
	t, failed, _, err := enhanceSection(root, tmp)
	if err != nil {
		return err
	}
	t.print(os.Stdout)
	if failed {
		return errors.New("some enhance runs failed (see the table)")
	}
	return nil
}

// runCreation is `go run ./infra/bench creation`: job creation through the
// local API against raw PutItem and TransactWriteItems calls, alone.
func runCreation(ctx context.Context, root, tmp string) error {
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	before := loadAverage()
	var load *loadReport
	err = withStack(ctx, root, "bench-", func(clients *devstack.Stack) error {
		load, err = measureLoad(ctx, tpl, clients)
		return err
	})
	if err != nil {
		return err
	}
	r := &report{t: newReportTable(), host: runtime.GOOS + "/" + runtime.GOARCH}
	r.load(load)
	r.t.note("load average (1 min): %s before, %s after.", before, loadAverage())
	r.t.print(os.Stdout)
	if r.failed {
		return errors.New("some checks failed (see the table)")
	}
	return nil
}

// runJobsPages is `go run ./infra/bench jobs`: the jobs pages' rows alone.
func runJobsPages(ctx context.Context, root string) error {
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	before := loadAverage()
	rep, err := measureJobsStack(ctx, root, tpl)
	if err != nil {
		return err
	}
	r := &report{t: newReportTable(), host: runtime.GOOS + "/" + runtime.GOARCH}
	r.jobsPages(rep)
	r.t.note("load average (1 min): %s before, %s after.", before, loadAverage())
	r.t.print(os.Stdout)
	if r.failed {
		return errors.New("some checks failed (see the table)")
	}
	return nil
}

// runCost is `go run ./infra/bench cost`: the job runs, the webhooks and
// the video engine, and the cost rows (the 16K enhance mix needs the
// enhance table of a whole run).
func runCost(ctx context.Context, root, tmp string, begin time.Time) error {
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	src, err := photoPNG(photoSide)
	if err != nil {
		return err
	}
	before := loadAverage()
	fmt.Fprintln(os.Stderr, "bench: a 10 s video through the video engine...")
	video, videoErr := videoRunTime(ctx)
	var runs *runReport
	var hooks *webhookReport
	err = withStack(ctx, root, "bench-", func(clients *devstack.Stack) error {
		if runs, err = measureRuns(ctx, tpl, clients, src); err != nil {
			return err
		}
		hooks, err = measureWebhooks(ctx, tpl, clients, tmp)
		return err
	})
	if err != nil {
		return err
	}
	r := &report{t: newReportTable(), host: runtime.GOOS + "/" + runtime.GOARCH}
	r.runs(runs)
	r.t.sep()
	r.costs(runs, hooks.usage, functionMemory(tpl, "SweeperFunction"), costMixes(tpl, runs.usage, nil, video, videoErr))
	r.t.sep()
	r.webhooks(hooks)
	r.t.note("load average (1 min): %s before, %s after.", before, loadAverage())
	r.t.note("go run ./infra/bench cost took %.1f s.", time.Since(begin).Seconds())
	r.t.print(os.Stdout)
	if r.failed {
		return errors.New("some checks failed (see the table)")
	}
	return nil
}

// enhanceSection measures the engine against libvips and makes its table.
func enhanceSection(root, tmp string) (*table, bool, []enhanceResult, error) {
	before := loadAverage()
	results, vipsErr, err := measureEnhance(root, tmp)
	if err != nil {
		return nil, false, nil, err
	}
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return nil, false, nil, err
	}
	t, failed := enhanceTable(results, vipsErr, before, loadAverage(), workerMemory(tpl, "JobsQueue"))
	return t, failed, results, nil
}

// costMixes are the three jobs the cost table prices, with run times
// measured in this run: the queue phase's enhance (the worker's handler),
// the engine's 4000² -> 16000² JPEG (the enhance table's whole process),
// and a 10 s 720p video through the video engine.
func costMixes(tpl *sam.Template, ju jobUsage, enhanced []enhanceResult, video time.Duration, videoErr error) []mix {
	heavy := workerMemory(tpl, "JobsQueue")
	light := workerMemory(tpl, lightQueue)
	if light == 0 {
		light = heavy
	}
	mixes := []mix{{name: "small enhance 1024² → 2048² jpg", memoryMB: light, runTime: ju.runTime, source: "the queue phase's worker, p50"}}
	for _, e := range enhanced {
		if e.c.src == 4000 && e.c.side == 16000 && e.c.format == "jpg" {
			if wall, _, err := median(e.full); err == nil {
				mixes = append(mixes, mix{name: "16K enhance 4000² → 16000² jpg", memoryMB: heavy, runTime: wall, source: "the enhance table, median"})
			}
		}
	}
	if videoErr == nil {
		mixes = append(mixes, mix{name: "10 s video 1280x720 (model-d-flash-1.1)", memoryMB: light, runTime: video, source: "the video engine in process"})
	}
	return mixes
}

// runSoakOnly is -soak-only: the soak and its table.
func runSoakOnly(ctx context.Context, root, tmp string, begin time.Time, so soakOptions) error {
	fmt.Fprintf(os.Stderr, "bench: soak of make run's runner, %d req/s for %s...\n", so.rate, so.d)
	soak := measureSoak(ctx, root, tmp, so.d, so.rate)
	r := &report{t: newReportTable(), host: runtime.GOOS + "/" + runtime.GOARCH}
	r.soak(soak)
	r.soakFootnotes(soak)
	r.t.note("make bench -soak-only took %.1f s.", time.Since(begin).Seconds())
	r.t.print(os.Stdout)
	if r.failed {
		return errors.New("some checks failed (see the table)")
	}
	return nil
}
