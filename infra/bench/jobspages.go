package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/middleware"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/internal/app"
	"genjobs/internal/app/generatefn"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/membersdb"
)

// The console's jobs pages (jobspages.go): /app/jobs over a workspace of
// jobsTotal jobs, a job's page and the poll route, through the local API
// as a signed-in person, and job creation billed in compute units (the
// in-process creation path the application and OAuth MCP use) next to the
// raw TransactWriteItems of the same items.
const (
	jobsTotal     = 10_000
	jobsRunning   = 5 // the newest jobs, left queued: what the poll route reads
	jobsWorkspace = "ws_bench_jobs"
	cuWorkspace   = "ws_bench_jobs_cu" // the creations' own: the list's holds jobsTotal jobs
	jobsWriters   = 8
	jobsClients   = 2
	jobsRequests  = 600
	jobsDuration  = 20 * time.Second
	jobsWarmup    = 30
	jobsPages     = 10 // a walk of the list goes this many pages back, then starts again
	jobsPerson    = "bench-person@example.com"
	jobsPassword  = "Bench-Person-Pass-1!"
	// maxListP50 and maxListReads are the list's budget (docs/console.md).
	maxListP50   = 30 * time.Millisecond
	maxListReads = 2
	// minCUCreation is CU creation's rate against the raw transaction's,
	// measured in cuRounds interleaved rounds.
	minCUCreation = 0.9
	cuRounds      = 4
)

// jobsReport is the jobs pages' run.
type jobsReport struct {
	loadAvg     string
	populate    time.Duration
	list, byWho loadStats // the list's pages walked, unfiltered and by person
	page, poll  loadStats
	// Table calls of one request beyond the session's (reads), and the
	// session's own (a poll refused before any job is read).
	listReads, whoReads, pageReads, pollReads map[string]int
	session                                   map[string]int
	cu, cuRaw                                 loadStats
	cuPrice                                   string
	cuCalls                                   map[string]int // one creation's AWS calls
}

// measureJobsStack starts emulators of its own and measures the jobs
// pages on them.
func measureJobsStack(ctx context.Context, root string, tpl *sam.Template) (rep *jobsReport, err error) {
	err = withStack(ctx, root, "bench-jobs-", func(clients *devstack.Stack) error {
		rep, err = measureJobs(ctx, tpl, clients)
		return err
	})
	return rep, err
}

func measureJobs(ctx context.Context, tpl *sam.Template, local *devstack.Stack) (*jobsReport, error) {
	m := &meter{}
	local.FunctionAPIOptions = []func(*middleware.Stack) error{m.count}
	local.Table, local.JobsQueue = "genjobs-bench-jobs", "genjobs-bench-jobs-jobs"
	local.ResultsBucket, local.AssetsBucket = "genjobs-bench-jobs-results", "genjobs-bench-jobs-assets"
	if err := local.Provision(ctx); err != nil {
		return nil, err
	}
	if err := local.ProvisionQueues(ctx, tpl); err != nil {
		return nil, err
	}
	if err := local.ProvisionConsole(ctx); err != nil {
		return nil, err
	}
	st := store.New(local.DynamoDB, local.Table)
	if _, err := benchWorkspace(ctx, st, jobsWorkspace, loadLimit); err != nil {
		return nil, err
	}
	if _, err := benchWorkspace(ctx, st, cuWorkspace, loadLimit); err != nil {
		return nil, err
	}
	if _, err := accountsdb.New(st).SetPlan(ctx, cuWorkspace, 100_000_000, time.Now()); err != nil {
		return nil, err
	}
	idp, err := local.Cognito()
	if err != nil {
		return nil, err
	}
	u, _, err := idp.EnsureUser(ctx, jobsPerson)
	if err == nil {
		err = idp.SetPassword(ctx, jobsPerson, jobsPassword)
	}
	if err == nil {
		err = membersdb.New(st).AddMember(ctx, member.Membership{WorkspaceID: jobsWorkspace, UserID: u.UserID, Email: jobsPerson, Role: member.Owner, AddedAt: time.Now()})
	}
	if err != nil {
		return nil, fmt.Errorf("the bench's person: %w", err)
	}
	rep := &jobsReport{}

	// Creation billed in compute units, first, while the table is small
	// (the raw side copies a creation's items, found by a scan).
	if err := measureCUCreation(ctx, tpl, local, m, u.UserID, rep); err != nil {
		return nil, err
	}

	fmt.Fprintf(os.Stderr, "bench: storing %d jobs (%d writers)...\n", jobsTotal, jobsWriters)
	begin := time.Now()
	running, err := populateJobs(ctx, st, u.UserID, jobsTotal)
	if err != nil {
		return nil, err
	}
	rep.populate = time.Since(begin)

	served, err := serveAPI(tpl, local)
	if err != nil {
		return nil, err
	}
	defer served.close()
	b, err := signInBench(ctx, served.url)
	if err != nil {
		return nil, err
	}
	one := func(path string) (map[string]int, error) {
		before := m.snapshot()
		_, err := b.get(ctx, path)
		return m.snapshot().minus(before).calls, err
	}
	// The session's reads: a poll refused before any job is read.
	if rep.session, err = one("/app/jobs/poll?ids=x"); err == nil || !strings.HasPrefix(err.Error(), "400") {
		return nil, fmt.Errorf("a poll of a bad id: %v; want a 400", err)
	}
	first, err := b.get(ctx, "/app/jobs")
	if err != nil {
		return nil, err
	}
	ended := regexp.MustCompile(`data-job="([0-9a-f-]{36})" data-status="completed"`).FindStringSubmatch(first)
	if ended == nil {
		return nil, fmt.Errorf("/app/jobs shows no completed job")
	}
	pollPath := "/app/jobs/poll?ids=" + strings.Join(running, ",")
	for _, c := range []struct {
		to   *map[string]int
		path string
	}{
		{&rep.listReads, "/app/jobs"}, {&rep.whoReads, "/app/jobs?person=" + u.UserID},
		{&rep.pageReads, "/app/jobs/" + ended[1]}, {&rep.pollReads, pollPath},
	} {
		calls, err := one(c.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.path, err)
		}
		*c.to = minusCalls(calls, rep.session)
	}

	fmt.Fprintf(os.Stderr, "bench: /app/jobs, a job page and the poll route (%d clients)...\n", jobsClients)
	b.walk(ctx, "/app/jobs", jobsWarmup, jobsDuration)
	rep.loadAvg = loadAverage()
	rep.list = b.walk(ctx, "/app/jobs", jobsRequests, jobsDuration)
	rep.byWho = b.walk(ctx, "/app/jobs?person="+u.UserID, jobsRequests, jobsDuration)
	rep.page = b.repeat(ctx, "/app/jobs/"+ended[1], jobsRequests, jobsDuration)
	rep.poll = b.repeat(ctx, pollPath, jobsRequests, jobsDuration)
	return rep, ctx.Err()
}

// minusCalls is a's calls less b's, by operation.
func minusCalls(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range a {
		if v -= b[k]; v != 0 {
			out[k] = v
		}
	}
	return out
}

// tableCalls is how many DynamoDB calls calls holds.
func tableCalls(calls map[string]int) int {
	n := 0
	for k, v := range calls {
		if strings.HasPrefix(k, "DynamoDB.") {
			n += v
		}
	}
	return n
}

// measureCUCreation creates jobs billed in compute units through the
// generate handler in process, as the application's playground and an
// OAuth MCP connection call it (httpapi.Origin with the person), then
// makes as many raw TransactWriteItems of a creation's items.
func measureCUCreation(ctx context.Context, tpl *sam.Template, local *devstack.Stack, m *meter, userID string, rep *jobsReport) error {
	env, err := tpl.Env("GenerateFunction", local.Resolve())
	if err != nil {
		return err
	}
	d, err := app.Config(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	d.AWS, d.Log = local.FunctionConfig(), slog.New(slog.DiscardHandler)
	api, err := sqswire.NewJobsAPI(d)
	if err != nil {
		return err
	}
	g, err := generatefn.Handler(d, api)
	if err != nil {
		return err
	}
	h := httpapi.Middleware(d.Log, g.Routes())
	origin := httpapi.Origin{Source: job.SourceApp, Person: &httpapi.Person{WorkspaceID: cuWorkspace, UserID: userID, Email: jobsPerson}}
	create := func(ctx context.Context) (string, error) {
		req := httptest.NewRequestWithContext(httpapi.WithOrigin(ctx, origin), http.MethodPost, generatePath, strings.NewReader(generateBody))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return "", fmt.Errorf("%d %s", rec.Code, strings.TrimSpace(rec.Body.String()))
		}
		return jobID(rec.Body.Bytes())
	}
	before := m.snapshot()
	id, err := create(ctx)
	if err != nil {
		return fmt.Errorf("a job billed in compute units: %w", err)
	}
	rep.cuCalls = m.snapshot().minus(before).calls
	j, err := api.Store.Job(ctx, id)
	if err != nil {
		return err
	}
	if !j.InUnits() {
		return fmt.Errorf("job %s is billed in %q, not compute units", id, j.Currency)
	}
	rep.cuPrice = j.Units.String() + " CU"
	put, err := newRawPutIn(ctx, local.DynamoDB, local.Table, id)
	if err != nil {
		return err
	}
	put.workspace = cuWorkspace
	call := func(ctx context.Context) error { _, err := create(ctx); return err }
	fmt.Fprintf(os.Stderr, "bench: job creation billed in compute units, in process, against raw TransactWriteItems (%d clients, %d rounds each)...\n", loadClients, cuRounds)
	drive(ctx, loadClients, warmupRequests, loadDuration, call)
	drive(ctx, loadClients, warmupRequests, loadDuration, put.transact)
	// Interleaved rounds, so that the machine's load, which swings on this
	// shared machine, weighs on both alike.
	for range cuRounds {
		rep.cu = rep.cu.plus(drive(ctx, loadClients, loadRequests/cuRounds, loadDuration/cuRounds, call))
		n := len(rep.cu.lat) + len(rep.cu.errs) - len(rep.cuRaw.lat) - len(rep.cuRaw.errs)
		rep.cuRaw = rep.cuRaw.plus(drive(ctx, loadClients, n, loadDuration/cuRounds, put.transact))
	}
	return ctx.Err()
}

// populateJobs stores n jobs of the bench workspace through the store, as
// creations do, of two endpoints and the three sources (a third of them
// the person's), ended completed with an output, but the newest
// jobsRunning, left queued; it returns those.
func populateJobs(ctx context.Context, st *store.Store, personID string, n int) ([]string, error) {
	base := time.Now().Add(-24 * time.Hour)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, jobsWriters)
	running := make([]string, jobsRunning)
	for w := range jobsWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				at := base.Add(time.Duration(i) * 5 * time.Second)
				j := &job.Job{ID: job.NewID(at), WorkspaceID: jobsWorkspace, Status: job.Queued, CreatedAt: at,
					Endpoint: []string{generatePath, "/generate/image/vendor-b/model-e-4"}[i%2], Request: []byte(generateBody),
					Source: []string{job.SourceAPI, job.SourceMCP, job.SourceApp}[i%3], CreatedBy: "bench", Price: 30_000}
				if j.Source != job.SourceAPI {
					j.PersonID, j.CreatedBy = personID, jobsPerson
				}
				if err := st.CreateJob(ctx, j); err != nil {
					errs[w] = err
					return
				}
				if k := n - 1 - i; k < jobsRunning {
					running[k] = j.ID
					continue
				}
				out := []string{"results/" + j.ID + "/0.png"}
				if _, err := st.Transition(ctx, j, job.Change{To: job.Completed, Outputs: out}, at.Add(3*time.Second)); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("store the bench's jobs: %w", err)
		}
	}
	return running, nil
}

// benchBrowser is a signed-in person's browser of the console.
type benchBrowser struct {
	http *http.Client
	url  string
}

// signInBench signs the bench's person in through the console's form.
func signInBench(ctx context.Context, baseURL string) (*benchBrowser, error) {
	jar, _ := cookiejar.New(nil)
	b := &benchBrowser{url: baseURL, http: &http.Client{Jar: jar, Timeout: startTimeout,
		Transport:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: jobsClients},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	form := url.Values{"email": {jobsPerson}, "password": {jobsPassword}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/app/sign-in", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", baseURL)
	resp, err := b.http.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("sign in to the console: %d", resp.StatusCode)
	}
	return b, nil
}

// get reads a page; anything but 200 is an error starting with its status.
func (b *benchBrowser) get(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%d %s", resp.StatusCode, firstLine(string(body)))
	}
	return string(body), nil
}

var olderJobs = regexp.MustCompile(`href="(/app/jobs\?[^"]+)" id="jobs-next"`)

// walk makes n requests (or runs for d) from jobsClients goroutines, each
// following the list's "Older jobs" links from path, jobsPages pages back,
// then from path again.
func (b *benchBrowser) walk(ctx context.Context, path string, n int, d time.Duration) loadStats {
	calls := make([]func(context.Context) error, jobsClients)
	for w := range calls {
		at, pages := path, 0
		calls[w] = func(ctx context.Context) error {
			body, err := b.get(ctx, at)
			m := olderJobs.FindStringSubmatch(body)
			if pages++; err != nil || m == nil || pages >= jobsPages {
				at, pages = path, 0
			} else {
				at = strings.ReplaceAll(m[1], "&amp;", "&")
			}
			if err == nil && !strings.Contains(body, `<tr id="job-`) {
				err = fmt.Errorf("a page of %s without a job", path)
			}
			return err
		}
	}
	return driveEach(ctx, n, d, calls)
}

// repeat makes n requests of path (or for d) from jobsClients goroutines.
func (b *benchBrowser) repeat(ctx context.Context, path string, n int, d time.Duration) loadStats {
	return drive(ctx, jobsClients, n, d, func(ctx context.Context) error {
		_, err := b.get(ctx, path)
		return err
	})
}

func (r *report) jobsPages(s *jobsReport) {
	reads := func(calls map[string]int, budget int) string {
		note := fmt.Sprintf("%d table reads a request (%s)", tableCalls(calls), callList(calls))
		if budget > 0 && tableCalls(calls) > budget {
			note = r.fail("%s; at most %d", note, budget)
		}
		return note
	}
	row := func(measure, subject string, st loadStats, maxP50 time.Duration, note string) {
		if len(st.errs) > 0 {
			note = r.fail("%d of %d not 200: %s", len(st.errs), len(st.lat)+len(st.errs), failureSummary(st.errs))
		} else if p50 := percentile(st.lat, 50); maxP50 > 0 && p50 >= maxP50 {
			note = r.fail("p50 %s, over %s; %s", ms(p50), ms(maxP50), note)
		}
		r.t.add(measure, subject, strconv.Itoa(len(st.lat)), fmt.Sprintf("%.0f req/s", st.rate()),
			ms(percentile(st.lat, 50)), ms(percentile(st.lat, 99)), note)
	}
	row("jobs list, local API", "GET /app/jobs, 10,000 jobs", s.list, maxListP50, reads(s.listReads, maxListReads))
	row("jobs list, local API", "GET /app/jobs?person=...", s.byWho, maxListP50, reads(s.whoReads, maxListReads))
	row("job page, local API", "GET /app/jobs/{id}", s.page, 0, reads(s.pageReads, 0))
	row("poll, local API", fmt.Sprintf("GET /app/jobs/poll, %d running", jobsRunning), s.poll, 0, reads(s.pollReads, 1))
	ratio := 0.0
	if s.cuRaw.rate() > 0 {
		ratio = s.cu.rate() / s.cuRaw.rate()
	}
	note := fmt.Sprintf("%.2fx the raw transaction's rate (at least %.1fx); %s a job; calls: %s", ratio, minCUCreation, s.cuPrice, allCalls(s.cuCalls))
	if ratio < minCUCreation {
		note = r.fail("%s", note)
	}
	row("creation in CU, in process", "generate handler, a person's Origin", s.cu, 0, note)
	row("creation in CU, raw", "TransactWriteItems of its items", s.cuRaw, 0, "the same job, workspace, ledger, request and person items")
	r.t.note("jobs pages: own table, %s jobs of workspace %s (two endpoints, three sources, a third of them one person's), stored by %d writers",
		commas(jobsTotal), jobsWorkspace, jobsWriters)
	r.t.note("  in %.1f s, all completed with an output but the newest %d (queued); signed in through the console with Cognito on moto;",
		s.populate.Seconds(), jobsRunning)
	r.t.note("  each list request walks %d pages back by \"Older jobs\" and starts again; the reads are one request's DynamoDB calls", jobsPages)
	r.t.note("  beyond the session's (%s, every page's); %d-request warm-up first; 1-minute load average %s before them.",
		callList(s.session), jobsWarmup, s.loadAvg)
}

// callList is calls as "Query 1, BatchGetItem 1".
func callList(calls map[string]int) string {
	var parts []string
	for _, op := range []string{"GetItem", "Query", "BatchGetItem", "Scan"} {
		if n := calls["DynamoDB."+op]; n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// allCalls is every service's calls, as "DynamoDB.TransactWriteItems 1, SQS.SendMessage 1".
func allCalls(calls map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, calls[k]))
	}
	return strings.Join(parts, ", ")
}

// plus is s and o's calls together, as one run of their times summed.
func (s loadStats) plus(o loadStats) loadStats {
	return loadStats{lat: append(s.lat, o.lat...), errs: append(s.errs, o.errs...), elapsed: s.elapsed + o.elapsed}
}
