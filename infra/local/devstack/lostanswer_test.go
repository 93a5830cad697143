package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/emulator"
	"genjobs/internal/job"
	"genjobs/internal/provider/providertest"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/slotsdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
	"genjobs/internal/testenv"
	"genjobs/internal/webhook"
)

// Shape of the lost-answer test.
const (
	lostLoadFor   = 15 * time.Second       // steady load with losses
	lostPace      = 120 * time.Millisecond // between one client's requests
	lostClients   = 2                      // load goroutines
	lostRate      = 0.15                   // of first attempts of each write path
	lostLease     = 10 * time.Second       // WORKER_LEASE
	lostRequeue   = 10 * time.Second       // SWEEPER_REQUEUE_AFTER
	lostWorkSlack = 5 * time.Second        // a job's own work and queueing, generously
	lostSettleMax = 60 * time.Second       // for every job to end and every webhook to land
	lostPoll      = 250 * time.Millisecond // while waiting for them
	lostWorkspace = "ws_lost"
	// The routed endpoints: one whose predictions succeed at once (in
	// faultBodies), one whose predictions run until cancelled.
	lostInstantPath = "/generate/image/vendor-b/model-e-4"
	lostRunningPath = "/generate/video/vendor-c/model-c"
)

// lostPNG is the routed predictions' output.
var lostPNG = func() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 4)))
	return b.Bytes()
}()

// The write paths under test. Each must be injected at least once in a
// run: a path whose expressions changed (a renamed placeholder) is no
// longer recognised, and the test says so instead of passing without it.
const (
	pathCreation         = "creation"
	pathIdempotent       = "creation+idempotency key"
	pathEnd              = "end+settlement"
	pathPromotion        = "promotion"
	pathClaim            = "claim"
	pathHeartbeat        = "heartbeat"
	pathDeliveryClaim    = "delivery claim"
	pathDeliveryRecord   = "delivery record"
	pathDeliveryCreation = "delivery creation"
	pathSubmissionMark   = "provider submission mark"
	pathPredictionRecord = "provider prediction record"
	pathProviderCancel   = "provider cancel mark"
	pathShareLink        = "style share link creation"
	pathStyleChange      = "style flags change"
)

var lostPaths = []string{pathCreation, pathIdempotent, pathEnd, pathPromotion, pathClaim, pathHeartbeat,
	pathDeliveryClaim, pathDeliveryRecord, pathDeliveryCreation, pathSubmissionMark, pathPredictionRecord, pathProviderCancel,
	pathShareLink, pathStyleChange}

// lostPath names the write path of a DynamoDB call by what its request
// carries (the expressions the store writes); "" for the calls that are
// not one of the paths under test (reads, the stream, the ledger audit).
func lostPath(op string, body []byte) (string, float64) {
	has := func(s string) bool { return bytes.Contains(body, []byte(s)) }
	path := ""
	switch op {
	case "TransactWriteItems":
		switch {
		case has("jobs_active :one") && has(`"IDEM#`):
			path = pathIdempotent
		case has("jobs_active :one"):
			path = pathCreation
		case has("settlement"):
			path = pathEnd
		case has("jobs_running < max_running"):
			path = pathPromotion
		case has("attribute_not_exists(share_token)"):
			path = pathShareLink
		case has("version = :v"):
			path = pathStyleChange
		}
	case "UpdateItem":
		switch {
		case has("attempts :one"):
			path = pathClaim
		case has("lease_id = :holder"):
			path = pathHeartbeat
		case has("claim_until = :until"):
			path = pathDeliveryClaim
		case has("list_append(attempts"):
			path = pathDeliveryRecord
		case has("SET pred_marker = :marker"):
			path = pathSubmissionMark
		case has("SET pred_id = :id"):
			path = pathPredictionRecord
		case has("SET pred_cancelled = :yes"):
			path = pathProviderCancel
		}
	case "PutItem":
		if has(`"WEBHOOK"`) {
			path = pathDeliveryCreation
		}
	}
	if path == "" {
		return "", 0
	}
	return path, lostRate
}

// TestLostAnswers runs the local stack (gateway, functions, triggers) with
// its DynamoDB client behind a proxy that applies a write and then loses
// its answer (a TCP reset, a 500, or an answer held back 1.5 s), at random
// on 15% of the first attempts of each write path and always on the first,
// under a steady load of job creations with a webhook (half with an
// Idempotency-Key), and cancellations; model-e-4 is routed to a Replicate
// fake whose predictions succeed at once, model-c to one whose predictions
// run until cancelled, and those jobs are cancelled once submitted. Every
// write path named in lostPaths must have been injected. The SDK retries each
// lost answer, and the retry meets its own success. Invariants: every job
// created ends, exactly once (one reservation, one settlement); every
// webhook of an ended job is delivered and recorded succeeded; no job
// waits more than one lease beyond its work; the workspace's counters
// match its jobs and every balance its ledger; nothing is charged twice.
// The table of injections is logged (go test -v).
func TestLostAnswers(t *testing.T) {
	ctx := context.Background()
	proxy := testenv.NewLossy(t, testenv.DynamoDBEndpoint(), uint64(time.Now().UnixNano()), lostPath)
	proxy.LoseFirst = true
	local := devstack.New(emulator.DynamoDBClient(proxy.URL), testenv.SQS(t), testenv.S3(t), "http://127.0.0.1:3000")
	instant, running := providertest.NewReplicate(t), providertest.NewReplicate(t)
	instant.Succeed = providertest.NewFiles(t).Put("/out/lost.png", providertest.File{ContentType: "image/png", Data: lostPNG})
	local.ProviderRoutes = fmt.Sprintf(`{
		%q: {"provider": "replicate", "base_url": %q, "model": "acme/image", "input": {"prompt": "prompt"}, "secret": "replicate"},
		%q: {"provider": "replicate", "base_url": %q, "model": "acme/video", "input": {"prompt": "prompt"}, "secret": "replicate"}}`,
		lostInstantPath, instant.URL, lostRunningPath, running.URL)
	local.Secrets = devstack.ProviderSecrets{"replicate": json.RawMessage(fmt.Sprintf(`{"token": %q, "webhook_secret": %q}`, instant.Token, instant.WebhookSecret))}
	local.Env = map[string]string{
		"WORKER_LEASE": lostLease.String(), "SWEEPER_REQUEUE_AFTER": lostRequeue.String(),
		"WEBHOOK_SCHEDULE": "1s,2s,3s,4s,5s,6s,7s,8s,9s",
	}
	tpl := devstacktest.Provision(t, local)
	direct := store.New(testenv.DynamoDB(t), local.Table) // the checks read past the proxy
	// Funded, and with few running slots so that jobs wait in the backlog
	// and get promoted.
	token := devstacktest.Workspace(t, direct, lostWorkspace, 1000*billing.USD, 500, 3)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the stack's warnings and errors (last 40 lines):\n%s", logs.tail(40))
		}
	})
	ln := devstacktest.Listen(t)
	devstacktest.Serve(t, ln, local, tpl, log)

	recv := newHookReceiver(t)
	styles := lostStyles(t, direct, emulator.DynamoDBClient(proxy.URL), local.Table)
	var wg sync.WaitGroup
	wg.Go(func() { styles.load("http://"+ln.Addr().String(), token) })
	jobs := lostLoad(t, "http://"+ln.Addr().String(), token, recv.url)
	wg.Wait()
	if len(jobs) == 0 {
		t.Fatal("no job was created")
	}

	// Every job ends, and every webhook lands and is recorded.
	deadline := time.Now().Add(lostSettleMax)
	var open []string
	for {
		open = open[:0]
		for _, id := range jobs {
			j, err := direct.Job(ctx, id)
			if err != nil || !j.Status.Terminal() {
				open = append(open, id+": not ended")
				continue
			}
			d, err := deliveriesdb.New(direct).Delivery(ctx, id)
			if err != nil || d.State != webhook.Succeeded || recv.count(id) == 0 {
				open = append(open, id+": webhook not delivered and recorded")
			}
		}
		if len(open) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(lostPoll)
	}
	t.Logf("injections (first attempts of each write path; every retry passes):\n%s", proxy.Table())
	for _, p := range lostPaths {
		if proxy.Injected(p) == 0 {
			t.Errorf("write path %q was never injected: no call was recognised as it (its expressions changed?) or the load never reached it", p)
		}
	}
	if len(open) > 0 {
		t.Errorf("%d of %d jobs not done %s after the load:\n%s", len(open), len(jobs), lostSettleMax, strings.Join(open[:min(len(open), 10)], "\n"))
	}

	// Ended exactly once, charged at most once, never late by a lease.
	entries, err := ledgerdb.New(direct).LedgerEntries(ctx, lostWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]map[billing.Kind]int{}
	for _, e := range entries {
		if kinds[e.JobID] == nil {
			kinds[e.JobID] = map[billing.Kind]int{}
		}
		kinds[e.JobID][e.Kind]++
	}
	outcomes := map[job.Status]int{}
	var slowest time.Duration
	var late []string
	for _, id := range jobs {
		j, err := direct.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		outcomes[j.Status]++
		k := kinds[id]
		if k[billing.Reserve] != 1 || k[billing.Charge]+k[billing.Release] != 1 {
			t.Errorf("job %s (%s): ledger %v; want one reservation and one settlement", id, j.Status, k)
		}
		if j.Status == job.Completed && j.QueuedAt != nil && j.CompletedAt != nil {
			waited := j.CompletedAt.Sub(*j.QueuedAt)
			slowest = max(slowest, waited)
			if waited > lostLease+lostWorkSlack {
				late = append(late, fmt.Sprintf("%s: completed %s after queued (attempts %d)", id, waited.Round(time.Millisecond), j.Attempts))
			}
		}
	}
	if len(late) > 0 {
		t.Errorf("%d jobs waited more than one lease (%s) beyond their work (%s):\n%s", len(late), lostLease, lostWorkSlack, strings.Join(late, "\n"))
	}
	stored, err := slotsdb.New(direct).StoredSlots(ctx, lostWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	counted, err := slotsdb.New(direct).CountSlots(ctx, lostWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if stored != counted {
		t.Errorf("workspace verify: counters %+v, jobs %+v", stored, counted)
	}
	workspaces, err := accountsdb.New(direct).Workspaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range workspaces {
		a, err := ledgerdb.New(direct).AuditLedger(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Differences) > 0 {
			t.Errorf("ledger verify of %s: %s", ws, strings.Join(a.Differences, "; "))
		}
	}
	styles.check()
	t.Logf("outcomes: %d jobs (%s); slowest queued-to-completed %s; webhooks: %d POSTs for %d jobs (%d duplicates, which receivers drop by X-Service-Webhook-Id)",
		len(jobs), outcomeCounts(outcomes), slowest.Round(time.Millisecond), recv.total(), len(jobs), recv.total()-recv.distinct())
}

// lostLoad creates jobs with a webhook for lostLoadFor, every other one
// with an Idempotency-Key, and cancels every fourth one right away; beside
// them it creates jobs of lostRunningPath one at a time and cancels each
// once its prediction is submitted. It returns the ids of the jobs
// answered 200.
func lostLoad(t *testing.T, api, token, hook string) []string {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	var (
		mu   sync.Mutex
		jobs []string
		wg   sync.WaitGroup
	)
	var calls atomic.Int64
	call := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, api+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Webhook-URL", hook)
			if calls.Add(1)%2 == 0 {
				req.Header.Set("Idempotency-Key", auth.NewID("idem_"))
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	create := func(path, body string) (string, bool) {
		status, answer := call("POST", path, body)
		if status != 200 {
			t.Errorf("create: %d %s", status, answer)
			return "", false
		}
		var rec struct {
			ID string `json:"job_id"`
		}
		if json.Unmarshal(answer, &rec) != nil || rec.ID == "" {
			t.Errorf("create answered %s", answer)
			return "", false
		}
		mu.Lock()
		jobs = append(jobs, rec.ID)
		mu.Unlock()
		return rec.ID, true
	}
	end := time.Now().Add(lostLoadFor)
	// Jobs whose predictions run: each is cancelled once submitted (or
	// after 5 s), so that the provider's cancellation is recorded.
	wg.Go(func() {
		for time.Now().Before(end) {
			id, ok := create(lostRunningPath, `{"prompt":"a slow river"}`)
			if !ok {
				continue
			}
			for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(100 * time.Millisecond) {
				if _, rec := call("GET", "/jobs/"+id, ""); bytes.Contains(rec, []byte(`"status":"scheduled"`)) {
					break
				}
			}
			if status, body := call("DELETE", "/jobs/"+id, ""); status != 200 && status != 409 {
				t.Errorf("cancel: %d %s", status, body)
			}
		}
	})
	for c := range lostClients {
		wg.Go(func() {
			tick := time.NewTicker(lostPace)
			defer tick.Stop()
			for i := 0; time.Now().Before(end); i++ {
				<-tick.C
				b := faultBodies[(i+c)%len(faultBodies)]
				id, ok := create(b.path, b.body)
				if !ok {
					continue
				}
				if i%4 == 3 {
					if status, body := call("DELETE", "/jobs/"+id, ""); status != 200 && status != 409 {
						t.Errorf("cancel: %d %s", status, body)
					}
				}
			}
		})
	}
	wg.Wait()
	return jobs
}

// hookReceiver counts the webhook POSTs it gets, by job.
type hookReceiver struct {
	url   string
	mu    sync.Mutex
	byJob map[string]int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{byJob: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var rec struct {
			ID string `json:"job_id"`
		}
		b, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(b, &rec)
		r.mu.Lock()
		r.byJob[rec.ID]++
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	return r
}

func (r *hookReceiver) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byJob[id]
}

func (r *hookReceiver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.byJob {
		n += c
	}
	return n
}

func (r *hookReceiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byJob)
}

func outcomeCounts(m map[job.Status]int) string {
	var parts []string
	for st, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// lostStyleLoad makes styles' share links through the API and changes
// their flags as the operator CLI does (stylesdb through the proxy), each
// once: every answer must be the write's own success.
type lostStyleLoad struct {
	t      *testing.T
	direct *stylesdb.DB
	lossy  *stylesdb.DB
	ids    []string
	links  map[string]string // style id -> the link its first request answered
}

// lostStyleCount is how many styles the load shares and changes: enough
// for the 15% draws to lose some answers beside each path's first.
const lostStyleCount = 30

func lostStyles(t *testing.T, direct *store.Store, lossyDB *dynamodb.Client, table string) *lostStyleLoad {
	t.Helper()
	l := &lostStyleLoad{t: t, direct: stylesdb.New(direct), lossy: stylesdb.New(store.New(lossyDB, table)), links: map[string]string{}}
	now := time.Now()
	for i := range lostStyleCount {
		st := style.Style{ID: style.NewID(), Title: fmt.Sprintf("lost %d", i), Prompt: "a river", Models: []string{"model-e-4"},
			CreatedAt: now.Add(time.Duration(i) * time.Millisecond), WorkspaceID: lostWorkspace, Owner: style.APIOwner(lostWorkspace), Public: true}
		if err := l.direct.CreateStyle(context.Background(), st); err != nil {
			t.Fatal(err)
		}
		l.ids = append(l.ids, st.ID)
	}
	return l
}

// load asks each style's share link twice (201 is_new, then 200 the same
// link) and approves and features it, paced over the jobs' load.
func (l *lostStyleLoad) load(api, token string) {
	client := &http.Client{Timeout: 20 * time.Second}
	link := func(id string) (int, string, bool) {
		req, _ := http.NewRequest("GET", api+"/styles/"+id+"/share/link", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			l.t.Errorf("share link of %s: %v", id, err)
			return 0, "", false
		}
		defer resp.Body.Close()
		var out struct {
			Link  string `json:"share_link"`
			IsNew bool   `json:"is_new"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Link, out.IsNew
	}
	ctx := context.Background()
	pace := lostLoadFor / lostStyleCount
	for _, id := range l.ids {
		time.Sleep(pace)
		status, first, isNew := link(id)
		if status != http.StatusCreated || !isNew || first == "" {
			l.t.Errorf("the first share link request of %s: %d, %q, is_new %v; want 201, a link, is_new true", id, status, first, isNew)
		}
		l.links[id] = first
		if status, again, isNew := link(id); status != http.StatusOK || isNew || again != first {
			l.t.Errorf("the second share link request of %s: %d, %q, is_new %v; want 200, %q, is_new false", id, status, again, isNew, first)
		}
		if st, err := l.lossy.ApproveStyle(ctx, id); err != nil || !st.Approved {
			l.t.Errorf("approve %s: %v, %v; want approved", id, st.Approved, err)
		}
		if st, err := l.lossy.FeatureStyle(ctx, id, true, false); err != nil || !st.EditorsPick || !st.Approved {
			l.t.Errorf("feature %s: pick %v, approved %v, %v; want both", id, st.EditorsPick, st.Approved, err)
		}
	}
}

// check: each style's link resolves to it, and its two changes landed,
// once each (the style's version counts its changes).
func (l *lostStyleLoad) check() {
	ctx := context.Background()
	for _, id := range l.ids {
		token := l.links[id][strings.LastIndex(l.links[id], "/")+1:]
		if st, err := l.direct.SharedStyle(ctx, token); err != nil || st.ID != id {
			l.t.Errorf("the share link of %s resolves to %q, %v", id, st.ID, err)
		}
		st, err := l.direct.Style(ctx, id)
		if err != nil || !st.Approved || !st.EditorsPick {
			l.t.Errorf("style %s: approved %v, pick %v, %v; want both", id, st.Approved, st.EditorsPick, err)
		}
		var stored struct {
			Version int `dynamodbav:"version"`
		}
		if err := l.direct.Get(ctx, "STYLE#"+id, "STYLE", &stored); err != nil || stored.Version != 2 {
			l.t.Errorf("style %s: version %d, %v; want 2, one for each change", id, stored.Version, err)
		}
	}
}
