package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/billing"
	"genjobs/internal/emulator"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/slotsdb"
)

// Shape of the fault tests' load and waits.
const (
	faultClients     = 3                      // load goroutines
	faultPace        = 150 * time.Millisecond // between one client's requests: ~20 requests/s in all
	faultSteadyFor   = 3 * time.Second        // load before each fault, and after recovery
	faultFreezeFor   = 5 * time.Second        // SIGSTOP to SIGCONT
	faultRecoverMax  = 90 * time.Second       // for the first 2xx after a fault
	faultSettleMax   = 2 * time.Minute        // for every created job to end
	faultAnswerSlack = time.Second            // over the function's deadline (issue 10)
	faultWorkspace   = "ws_faults"
)

// TestFaults runs the local stack (gateway, functions, triggers) on
// emulators of its own under supervision, DynamoDB Local keeping its data on
// disk, and under a steady load of job creations (billing on) and reads
// injects three faults in turn: DynamoDB Local frozen for 5 s (SIGSTOP, then
// SIGCONT), DynamoDB Local killed and fauxqs killed (SIGKILL; the supervisor
// restarts them). For each, every request must be answered within its
// function's deadline plus a second with a 2xx, a 4xx or a 503; once the
// stack has recovered every job that was answered 200 must end; the
// workspace's slot counters must match its jobs and every workspace's
// balance its ledger (workspace verify, ledger verify --all), and no job may
// be charged twice. The figures of each fault are logged (go test -v).
func TestFaults(t *testing.T) {
	f := startFaultStack(t)
	t.Run("DynamoDB Local frozen for 5s", func(t *testing.T) {
		f.phase(t, func() (time.Time, time.Duration) {
			pid := f.emulators.DynamoDB.Process().Pid()
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(faultFreezeFor)
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			return time.Now(), 0
		})
	})
	t.Run("DynamoDB Local killed", func(t *testing.T) {
		f.phase(t, func() (time.Time, time.Duration) { return f.kill(t, f.emulators.DynamoDB) })
	})
	t.Run("fauxqs killed", func(t *testing.T) {
		f.phase(t, func() (time.Time, time.Duration) { return f.kill(t, f.emulators.Fauxqs) })
	})
}

// faultStack is the stack under test.
type faultStack struct {
	emulators *emulator.Supervised
	local     *devstack.Stack
	store     *store.Store
	api       string
	token     string
	bounds    map[string]time.Duration // route key -> function timeout + slack
	logs      *lockedBuffer
}

func startFaultStack(t *testing.T) *faultStack {
	t.Helper()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Emulators of its own: the shared ones of make test must never get a
	// signal. DynamoDB Local keeps its data on disk, as under make run.
	stack, err := emulator.StartStack(ctx, emulator.StackOptions{RepoRoot: root, LogPrefix: "test-faults-", DynamoDBPath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := &faultStack{logs: &lockedBuffer{}}
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	local := devstack.New(emulator.DynamoDBClient(stack.DynamoDB.Endpoint()), emulator.SQSClient(stack.Fauxqs.Endpoint()),
		emulator.S3Client(stack.Fauxqs.Endpoint()), "http://127.0.0.1:3000")
	local.UseMoto(stack.Moto.Endpoint())
	// The sweeper re-sends a lost message after 5 s rather than 2 minutes,
	// and a claim whose worker could not release it lapses after 10 s
	// rather than 150 s (jobs here take well under a second), so that each
	// fault's jobs end within the test.
	local.Env = map[string]string{"SWEEPER_REQUEUE_AFTER": "5s", "WORKER_LEASE": "10s"}
	tpl, err := sam.Load(filepath.Join(repo, "template.yaml"))
	if err != nil {
		_ = stack.Stop()
		t.Fatal(err)
	}
	if err = local.Provision(ctx); err == nil {
		err = local.ProvisionQueues(ctx, tpl)
	}
	if err != nil {
		_ = stack.Stop()
		t.Fatal(err)
	}
	f.emulators = stack.Supervise(emulator.SuperviseOptions{Log: log, Restarted: func(ctx context.Context) error {
		return local.Reprovision(ctx, tpl)
	}})
	t.Cleanup(func() {
		if err := f.emulators.Stop(); err != nil {
			t.Log(err)
		}
		if t.Failed() {
			t.Logf("the stack's warnings and errors (last 60 lines):\n%s", f.logs.tail(60))
		}
	})
	f.local, f.store = local, store.New(local.DynamoDB, local.Table)
	// Funded for every job the test creates, with room for them
	// (backlogs past 10 running jobs).
	f.token = devstacktest.Workspace(t, f.store, faultWorkspace, 1000*billing.USD, 500, 10)
	ln := devstacktest.Listen(t)
	devstacktest.Serve(t, ln, local, tpl, log)
	f.api = "http://" + ln.Addr().String()
	f.bounds = map[string]time.Duration{}
	timeouts := map[string]time.Duration{}
	for _, fn := range tpl.Functions() {
		timeouts[fn.LogicalID] = triggers.FunctionTimeout(fn)
	}
	for _, r := range tpl.Routes() {
		f.bounds[r.Key()] = timeouts[r.Function] + faultAnswerSlack
	}
	return f
}

// kill SIGKILLs an emulator and returns when its supervisor has it running
// again, with the kill's time and how long the restart took.
func (f *faultStack) kill(t *testing.T, s *emulator.Supervisor) (time.Time, time.Duration) {
	t.Helper()
	before := s.Restarts()
	if err := syscall.Kill(s.Process().Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	deadline := at.Add(faultRecoverMax)
	for s.Restarts() == before {
		if time.Now().After(deadline) {
			t.Fatalf("not restarted within %s", faultRecoverMax)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return at, time.Since(at)
}

// answer is one request of the load.
type answer struct {
	route  string // the route key it went to
	sent   time.Time
	took   time.Duration
	status int // 0: no answer
	err    string
	body   string
}

// load is the steady load of one phase.
type load struct {
	f      *faultStack
	stop   chan struct{}
	done   sync.WaitGroup
	mu     sync.Mutex
	all    []answer
	jobs   []string // answered 200 to a creation
	client *http.Client
}

func (f *faultStack) startLoad() *load {
	l := &load{f: f, stop: make(chan struct{}), client: &http.Client{Timeout: 20 * time.Second}}
	for c := range faultClients {
		l.done.Go(func() { l.run(c) })
	}
	return l
}

var faultBodies = []struct{ path, body string }{
	{"/generate/3d/vendor-g/model-g-3.1-rapid", `{"prompt":"a teapot"}`},
	{"/generate/image/vendor-b/model-e-4", `{"prompt":"a lighthouse","width":128,"height":96}`},
}

// run is one client: a creation, a list and a read of a created job in turn,
// one request every faultPace (a tick that comes during a slow answer is
// dropped, as a client waiting for it would).
func (l *load) run(c int) {
	tick := time.NewTicker(faultPace)
	defer tick.Stop()
	for i := c; ; i++ {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		switch i % 3 {
		case 0:
			b := faultBodies[(i/3)%len(faultBodies)]
			a := l.call("POST", b.path, "POST /generate/{kind}/{vendor}/{model}", b.body)
			if a.status == 200 {
				var rec struct {
					ID string `json:"job_id"`
				}
				if json.Unmarshal([]byte(a.body), &rec) == nil && rec.ID != "" {
					l.mu.Lock()
					l.jobs = append(l.jobs, rec.ID)
					l.mu.Unlock()
				}
			}
		case 1:
			l.call("GET", "/jobs?limit=20", "GET /jobs", "")
		case 2:
			l.mu.Lock()
			id := "00000000-0000-7000-8000-000000000000" // a 404 until a job exists
			if n := len(l.jobs); n > 0 {
				id = l.jobs[(i*7919)%n]
			}
			l.mu.Unlock()
			l.call("GET", "/jobs/"+id, "GET /jobs/{id}", "")
		}
	}
}

func (l *load) call(method, path, route, body string) answer {
	req, _ := http.NewRequest(method, l.f.api+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+l.f.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	a := answer{route: route, sent: time.Now()}
	resp, err := l.client.Do(req)
	if err == nil {
		var b []byte
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		a.status, a.body = resp.StatusCode, string(b)
	}
	a.took = time.Since(a.sent)
	if err != nil {
		a.status, a.err = 0, err.Error()
	}
	l.mu.Lock()
	l.all = append(l.all, a)
	l.mu.Unlock()
	return a
}

// firstOK is the first 2xx answer to a request sent at or after from, and
// the time it came.
func (l *load) firstOK(from time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, a := range l.all {
		if a.status/100 == 2 && !a.sent.Before(from) {
			if at := a.sent.Add(a.took); first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	return first, !first.IsZero()
}

func (l *load) end() ([]answer, []string) {
	close(l.stop)
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all), slices.Clone(l.jobs)
}

// phase runs the load, injects the fault (which returns when it ends, and
// how long a restart took), waits for the first 2xx after it, runs on a
// little, then checks the answers, the jobs and the books.
func (f *faultStack) phase(t *testing.T, fault func() (ended time.Time, restart time.Duration)) {
	l := f.startLoad()
	time.Sleep(faultSteadyFor)
	start := time.Now()
	ended, restart := fault()
	var recovered time.Time
	deadline := time.Now().Add(faultRecoverMax)
	for {
		if at, ok := l.firstOK(ended); ok {
			recovered = at
			break
		}
		if time.Now().After(deadline) {
			l.end()
			t.Fatalf("no 2xx answer within %s of the fault's end", faultRecoverMax)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(faultSteadyFor)
	answers, jobs := l.end()

	// Every request answered in time, with 2xx, 4xx or 503.
	var longest time.Duration
	statuses := map[int]int{}
	var bad []string
	for _, a := range answers {
		longest = max(longest, a.took)
		statuses[a.status]++
		bound := f.bounds[a.route]
		switch {
		case a.status == 0:
			bad = append(bad, fmt.Sprintf("%s sent at +%s: no answer after %s (%s)", a.route, a.sent.Sub(start).Round(time.Millisecond), a.took.Round(time.Millisecond), a.err))
		case a.took > bound:
			bad = append(bad, fmt.Sprintf("%s sent at +%s: %d after %s, over its bound of %s", a.route, a.sent.Sub(start).Round(time.Millisecond), a.status, a.took.Round(time.Millisecond), bound))
		case a.status/100 != 2 && a.status/100 != 4 && a.status != 503:
			bad = append(bad, fmt.Sprintf("%s sent at +%s: %d %s", a.route, a.sent.Sub(start).Round(time.Millisecond), a.status, strings.TrimSpace(a.body)))
		}
	}
	t.Logf("%d requests (%s), %d jobs created; longest answer %s, %d answered 503; first 2xx %s after the fault ended%s",
		len(answers), statusCounts(statuses), len(jobs), longest.Round(time.Millisecond), statuses[503],
		recovered.Sub(ended).Round(time.Millisecond), restartNote(restart))
	if len(bad) > 0 {
		t.Errorf("%d of %d requests were not answered in time with 2xx, 4xx or 503; the first ones:\n%s",
			len(bad), len(answers), strings.Join(bad[:min(len(bad), 15)], "\n"))
	}

	// Every job answered 200 ends: the lost messages are sent again.
	ctx := context.Background()
	pending := slices.Clone(jobs)
	settled := time.Now().Add(faultSettleMax)
	var firstDone time.Time // the first job created after the fault to complete
	for len(pending) > 0 && time.Now().Before(settled) {
		var still []string
		for _, id := range pending {
			j, err := f.store.Job(ctx, id)
			if err != nil || !j.Status.Terminal() {
				still = append(still, id)
				continue
			}
			if j.Status == job.Completed && j.CreatedAt.After(ended) && j.CompletedAt != nil && (firstDone.IsZero() || j.CompletedAt.Before(firstDone)) {
				firstDone = *j.CompletedAt
			}
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if len(pending) > 0 {
		var desc []string
		for _, id := range pending[:min(len(pending), 10)] {
			j, err := f.store.Job(ctx, id)
			if err != nil {
				desc = append(desc, id+": "+err.Error())
				continue
			}
			desc = append(desc, fmt.Sprintf("%s: %s (attempts %d, lease until %s)", id, j.Status, j.Attempts, j.Lease.Until.Format(time.RFC3339)))
		}
		t.Errorf("%d of %d jobs answered 200 had not ended %s after the load stopped:\n%s", len(pending), len(jobs), faultSettleMax, strings.Join(desc, "\n"))
	} else if !firstDone.IsZero() {
		t.Logf("all %d jobs ended; the first job created after the fault completed %s after it ended", len(jobs), firstDone.Sub(ended).Round(time.Millisecond))
	}

	// workspace verify and ledger verify --all, and no job charged twice.
	stored, err := slotsdb.New(f.store).StoredSlots(ctx, faultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	counted, err := slotsdb.New(f.store).CountSlots(ctx, faultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if stored != counted {
		t.Errorf("workspace verify: counters %+v, jobs %+v", stored, counted)
	}
	workspaces, err := accountsdb.New(f.store).Workspaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range workspaces {
		a, err := ledgerdb.New(f.store).AuditLedger(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Differences) > 0 {
			t.Errorf("ledger verify of %s: %s", ws, strings.Join(a.Differences, "; "))
		}
	}
	entries, err := ledgerdb.New(f.store).LedgerEntries(ctx, faultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	charges := map[string]int{}
	for _, e := range entries {
		if e.Kind == billing.Charge {
			charges[e.JobID]++
		}
	}
	for id, n := range charges {
		if n > 1 {
			t.Errorf("job %s was charged %d times", id, n)
		}
	}
}

func statusCounts(m map[int]int) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		name := fmt.Sprint(c)
		if c == 0 {
			name = "no answer"
		}
		parts[i] = fmt.Sprintf("%s: %d", name, m[c])
	}
	return strings.Join(parts, ", ")
}

func restartNote(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprintf(" (the supervisor had it running again %s after the kill)", d.Round(time.Millisecond))
}

// lockedBuffer collects the stack's log lines from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(l.b.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
