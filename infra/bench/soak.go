package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"genjobs/infra/local/devstack"
	"genjobs/internal/emulator"
	"genjobs/internal/store"
)

// The soak's defaults (flags -soak and -soak-rate) and its shape.
const (
	defaultSoakFor  = 60 * time.Second
	defaultSoakRate = 50
	soakWorkspace   = "ws_bench_soak"
	// soakMaxInFlight bounds the requests waiting for an answer: past it a
	// tick is counted as dropped rather than piling goroutines up.
	soakMaxInFlight = 500
	soakSampleEvery = 5 * time.Second
	// soakWarmup is when the memory baseline is taken: the runner's and
	// the JVM's heaps grow to their working size in the first seconds.
	soakWarmup = 10 * time.Second
	// soakReadyTimeout covers building nothing (the binary is built
	// first) but a cold install of the emulators.
	soakReadyTimeout = 3 * time.Minute
)

// soakMix is the requests of the soak, in proportion: one creation (both
// cheap models in turn) for four lists and five reads of a job created
// earlier.
var soakMix = []string{"create", "list", "get", "list", "get", "list", "get", "list", "get", "get"}

var soakBodies = []struct{ path, body string }{
	{"/generate/3d/vendor-g/model-g-3.1-rapid", `{"prompt":"a teapot"}`},
	{"/generate/image/vendor-b/model-e-4", `{"prompt":"a lighthouse","width":128,"height":96}`},
}

// soakAnswer is one request of the soak.
type soakAnswer struct {
	kind   string
	status int // 0: no answer
	took   time.Duration
	err    string
}

// memSample is the resident memory of the runner and its emulators.
type memSample struct {
	at                       time.Duration // since the load started; negative: before
	runner, dynamodb, fauxqs int64         // bytes
}

// soakReport is one soak.
type soakReport struct {
	rate                float64
	duration, elapsed   time.Duration
	answers             []soakAnswer
	dropped             int
	mem                 []memSample
	created, completed  int
	storedFiles         int   // in the results bucket at the end
	storedBytes         int64 // their size, which fauxqs keeps in memory
	loadBefore, loadEnd string
	err                 error // the soak could not run
}

// measureSoak builds the local runner (infra/local, what make run runs),
// starts it on free ports with its data in a directory of its own, and
// sends it rate requests a second for d, open loop (each request on its
// own, so a slow answer does not slow the rate down), sampling the resident
// memory of the runner and of its two emulators.
func measureSoak(ctx context.Context, root, tmp string, d time.Duration, rate int) *soakReport {
	rep := &soakReport{rate: float64(rate), duration: d, loadBefore: loadAverage()}
	bin := filepath.Join(tmp, "local-runner")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./infra/local")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		rep.err = fmt.Errorf("build infra/local: %v\n%s", err, out)
		return rep
	}
	ports, err := freePorts(3)
	if err != nil {
		rep.err = err
		return rep
	}
	logPath := filepath.Join(tmp, "soak-runner.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		rep.err = err
		return rep
	}
	defer logFile.Close()
	runner := exec.Command(bin, "serve", "-state", filepath.Join(tmp, "soak-state"))
	runner.Dir = root
	runner.Stdout, runner.Stderr = logFile, logFile
	runner.Env = append(os.Environ(), "PORT="+strconv.Itoa(ports[0]), "DYNAMODB_PORT="+strconv.Itoa(ports[1]),
		"FAUXQS_PORT="+strconv.Itoa(ports[2]))
	if err := runner.Start(); err != nil {
		rep.err = err
		return rep
	}
	exited := make(chan error, 1)
	go func() { exited <- runner.Wait() }()
	defer func() {
		// Ctrl-C's way out: the runner stops its emulators itself.
		_ = runner.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = runner.Process.Kill()
			<-exited
		}
	}()
	api := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if err := waitReady(ctx, api, exited); err != nil {
		rep.err = fmt.Errorf("%w (see the end of %s:\n%s)", err, logPath, fileTail(logPath, 1500))
		return rep
	}
	s := store.New(emulator.DynamoDBClient("http://127.0.0.1:"+strconv.Itoa(ports[1])), devstack.Table)
	token, err := benchWorkspace(ctx, s, soakWorkspace, loadLimit)
	if err != nil {
		rep.err = err
		return rep
	}
	pids := emulatorPids(runner.Process.Pid)
	sample := func(at time.Duration) {
		rep.mem = append(rep.mem, memSample{at: at, runner: rss(runner.Process.Pid), dynamodb: rss(pids["java"]), fauxqs: rss(pids["node"])})
	}
	sample(-time.Nanosecond)

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: soakMaxInFlight}}
	var mu sync.Mutex
	var jobs []string
	var wg sync.WaitGroup
	inFlight := make(chan struct{}, soakMaxInFlight)
	// Memory is sampled beside the load, on a goroutine of its own.
	start := time.Now()
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(soakSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				sample(time.Since(start))
			}
		}
	}()
	// Request i is sent at start + i/rate: a late wake-up sends at once
	// rather than skipping, so the rate holds on a busy machine.
	interval := time.Second / time.Duration(rate)
	for i := 0; ctx.Err() == nil; {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= d {
			break
		}
		if wait := time.Until(at); wait > 0 {
			select {
			case <-ctx.Done():
				continue
			case <-time.After(wait):
			}
		}
		kind := soakMix[i%len(soakMix)]
		n := i
		i++
		select {
		case inFlight <- struct{}{}:
		default:
			rep.dropped++
			continue
		}
		wg.Go(func() {
			defer func() { <-inFlight }()
			mu.Lock()
			method, path, body := soakRequest(n, jobs)
			mu.Unlock()
			a, respBody := soakCall(ctx, client, method, api+path, token, body)
			a.kind = kind
			mu.Lock()
			defer mu.Unlock()
			rep.answers = append(rep.answers, a)
			if kind == "create" && a.status == http.StatusOK {
				var rec struct {
					ID string `json:"job_id"`
				}
				if json.Unmarshal(respBody, &rec) == nil && rec.ID != "" {
					jobs = append(jobs, rec.ID)
				}
			}
		})
	}
	sendEnd := time.Since(start)
	wg.Wait()
	close(stopSampling)
	<-sampled
	rep.elapsed = sendEnd
	sample(time.Since(start))
	rep.loadEnd = loadAverage()
	rep.created = len(jobs)
	for _, id := range jobs {
		if j, err := s.Job(ctx, id); err == nil && j.Status.Terminal() {
			rep.completed++
		}
	}
	pages := s3.NewListObjectsV2Paginator(emulator.S3Client("http://127.0.0.1:"+strconv.Itoa(ports[2])),
		&s3.ListObjectsV2Input{Bucket: aws.String(devstack.ResultsBucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			break // the note then shows what was counted
		}
		for _, o := range page.Contents {
			rep.storedFiles++
			rep.storedBytes += aws.ToInt64(o.Size)
		}
	}
	return rep
}

// soakRequest is request n of the soak, of kind soakMix[n % len]: a
// creation (the models of soakBodies in turn), a list, or a read of one of
// the jobs created so far (GET /jobs?limit=1 while there is none).
func soakRequest(n int, jobs []string) (method, path, body string) {
	switch soakMix[n%len(soakMix)] {
	case "create":
		b := soakBodies[(n/len(soakMix))%len(soakBodies)]
		return http.MethodPost, b.path, b.body
	case "list":
		return http.MethodGet, "/jobs?limit=20", ""
	}
	if len(jobs) == 0 {
		return http.MethodGet, "/jobs?limit=1", ""
	}
	return http.MethodGet, "/jobs/" + jobs[(n*7919)%len(jobs)], ""
}

func soakCall(ctx context.Context, client *http.Client, method, url, token, body string) (soakAnswer, []byte) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return soakAnswer{err: err.Error()}, nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	begin := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return soakAnswer{took: time.Since(begin), err: err.Error()}, nil
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := soakAnswer{status: resp.StatusCode, took: time.Since(begin)}
	if err != nil {
		a.status, a.err = 0, err.Error()
	}
	return a, b
}

// waitReady waits for the runner's API to answer, or for the runner to
// exit.
func waitReady(ctx context.Context, api string, exited <-chan error) error {
	deadline := time.Now().Add(soakReadyTimeout)
	for {
		resp, err := http.Get(api + "/openapi.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the runner exited before its API answered (%v)", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the runner's API did not answer within %s", soakReadyTimeout)
		}
	}
}

// freePorts reserves n distinct free ports (on all interfaces, where the
// emulators bind) and releases them for the runner to take.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// emulatorPids finds the runner's children by their command name: java
// (DynamoDB Local) and node (fauxqs).
func emulatorPids(parent int) map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if comm, ppid, ok := parseStat(string(b)); ok && ppid == parent {
			out[comm] = pid
		}
	}
	return out
}

// parseStat reads a process's command name and parent's pid from its
// /proc/<pid>/stat: "pid (comm) state ppid ...", where comm may hold spaces
// and parentheses, so the fields are split after the last ')'.
func parseStat(stat string) (comm string, ppid int, ok bool) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, false
	}
	return stat[open+1 : end], ppid, true
}

// rss is a process's resident set size in bytes (VmRSS), 0 if unknown.
func rss(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	return vmRSS(string(b))
}

// vmRSS reads the VmRSS line of a /proc/<pid>/status in bytes, 0 if there
// is none.
func vmRSS(status string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// fileTail is the last n bytes of a file.
func fileTail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return strings.TrimSpace(string(b))
}

const fauxqsRow = "fauxqs (node)"

// soak reports measureSoak: the latency of each kind of request, the
// answers by status, and the memory of the runner and its emulators.
func (r *report) soak(s *soakReport) {
	const measure = "soak, make run's runner"
	if s.err != nil {
		r.t.add(measure, "", "0", "", "", "", r.fail("%s", firstLine(s.err.Error())))
		return
	}
	byKind := map[string][]time.Duration{}
	var all []time.Duration
	statuses := map[int]int{}
	var transport []string
	for _, a := range s.answers {
		statuses[a.status]++
		if a.status == 0 {
			transport = append(transport, a.err)
			continue
		}
		byKind[a.kind] = append(byKind[a.kind], a.took)
		all = append(all, a.took)
	}
	var codes []string
	bad := 0
	for _, code := range slices.Sorted(maps.Keys(statuses)) {
		if code == 0 {
			continue
		}
		codes = append(codes, fmt.Sprintf("%d ×%d", code, statuses[code]))
		if code/100 != 2 {
			bad += statuses[code]
		}
	}
	note := fmt.Sprintf("open loop, %.0f req/s asked for %s; answers: %s", s.rate, s.duration, strings.Join(codes, ", "))
	switch {
	case len(transport) > 0 || bad > 0 || s.dropped > 0:
		note = r.fail("%d not 2xx, %d without an answer (%s), %d not sent (%d in flight); answers: %s",
			bad, len(transport), failureSummary(transport), s.dropped, soakMaxInFlight, strings.Join(codes, ", "))
	}
	r.t.add(measure, "all requests", strconv.Itoa(len(s.answers)), fmt.Sprintf("%.1f req/s", float64(len(s.answers))/s.elapsed.Seconds()),
		ms(percentile(all, 50)), ms(percentile(all, 99)), note)
	for _, k := range []struct{ kind, subject string }{
		{"create", "POST /generate (model-g, model-e)"}, {"list", "GET /jobs?limit=20"}, {"get", "GET /jobs/{id}"},
	} {
		lat := byKind[k.kind]
		r.t.add(measure, k.subject, strconv.Itoa(len(lat)), "", ms(percentile(lat, 50)), ms(percentile(lat, 99)), "")
	}
	r.t.add(measure, "jobs", strconv.Itoa(s.created), fmt.Sprintf("%d ended", s.completed), "", "",
		"created during the soak, ended by its last answer (the worker plays the jobs queue as in make run)")

	// Memory: before the load, after the warm-up, at the end, and the most.
	base := s.mem[len(s.mem)-1] // a soak shorter than the warm-up has only its end
	for _, m := range s.mem {
		if m.at >= soakWarmup {
			base = m
			break
		}
	}
	first, last := s.mem[0], s.mem[len(s.mem)-1]
	for _, p := range []struct {
		name string
		of   func(memSample) int64
	}{
		{"runner (infra/local serve)", func(m memSample) int64 { return m.runner }},
		{"DynamoDB Local (java)", func(m memSample) int64 { return m.dynamodb }},
		{fauxqsRow, func(m memSample) int64 { return m.fauxqs }},
	} {
		most := int64(0)
		for _, m := range s.mem {
			most = max(most, p.of(m))
		}
		note := fmt.Sprintf("before the load %s, at +%.0fs %s, most %s; end vs +%.0fs: %+.1f%%",
			mebibytes(p.of(first)), base.at.Seconds(), mebibytes(p.of(base)), mebibytes(most), base.at.Seconds(),
			100*(float64(p.of(last))-float64(p.of(base)))/float64(max(p.of(base), 1)))
		if p.name == fauxqsRow {
			note += fmt.Sprintf("; it holds %d result files, %s", s.storedFiles, mebibytes(s.storedBytes))
		}
		if p.of(last) == 0 {
			note = r.fail("no RSS read for this process")
		}
		r.t.add("soak memory, RSS at the end", p.name, strconv.Itoa(len(s.mem)), mebibytes(p.of(last)), "", "", note)
	}
}

func (r *report) soakFootnotes(s *soakReport) {
	r.t.note("soak: `go build ./infra/local` run as `serve -state <tmp>` (make run's runner: gateway, functions, triggers, supervised emulators) on free")
	r.t.note("  loopback ports; workspace %s without limits in the way; one request every 1/rate s, each on its own goroutine (open loop,", soakWorkspace)
	r.t.note("  at most %d waiting), %d%% creations, %d%% GET /jobs?limit=20, %d%% GET /jobs/{id} of a job it created; latency = request sent ->",
		soakMaxInFlight, 100*count(soakMix, "create")/len(soakMix), 100*count(soakMix, "list")/len(soakMix), 100*count(soakMix, "get")/len(soakMix))
	r.t.note("  body read. Memory: VmRSS of the runner and of its children java and node, every %s; the first sample from +%s on is the",
		soakSampleEvery, soakWarmup)
	r.t.note("  baseline after the warm-up. fauxqs keeps every stored file in memory, so its RSS grows with the results of the jobs run.")
	r.t.note("  1-minute load average %s before the soak, %s after it.", s.loadBefore, s.loadEnd)
}

func count(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}
