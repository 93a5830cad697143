package sweeper_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/auth"
	"genjobs/internal/clock"
	"genjobs/internal/job"
	"genjobs/internal/lifecycle"
	"genjobs/internal/provider/steps"
	"genjobs/internal/queue"
	"genjobs/internal/queue/providerqueue"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/leasedb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/slotsdb"
	"genjobs/internal/sweeper"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

type env struct {
	t      *testing.T
	store  *store.Store
	sqs    *sqs.Client
	url    string
	dlq    string
	clock  *clock.Fixed
	sweep  *sweeper.Sweeper
	ctx    context.Context
	nextID time.Duration
}

func newEnv(t *testing.T) *env {
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "sweep")
	if err := schema.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store.New(db, table), sqs: testenv.SQS(t), clock: &clock.Fixed{T: t0}, ctx: ctx}
	var err error
	if e.url, e.dlq, err = queue.Create(ctx, e.sqs, testenv.UniqueName(t, "jobs")); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	q := queue.NewJobSender(e.sqs, e.url)
	e.sweep = &sweeper.Sweeper{
		Store:     e.store,
		Lifecycle: &lifecycle.Ender{Store: e.store, Queue: q, Clock: e.clock, Log: log},
		Queue:     q, Dead: queue.NewDeadLetters(e.sqs, e.dlq),
		Clock: e.clock, Log: log,
		Deadline: sweeper.DefaultDeadline, RequeueAfter: sweeper.DefaultRequeueAfter,
	}
	return e
}

func (e *env) workspace(id string, maxRunning int) {
	if err := accountsdb.New(e.store).CreateWorkspace(e.ctx, auth.Workspace{ID: id, MaxConcurrent: 20, MaxRunning: maxRunning, CreatedAt: t0}); err != nil {
		e.t.Fatal(err)
	}
}

// create stores a job now, as the generate function would, without a message.
func (e *env) create(ws string) *job.Job {
	e.t.Helper()
	e.nextID += time.Millisecond
	j := &job.Job{ID: job.NewID(e.clock.T), WorkspaceID: ws, CreatedAt: e.clock.T.Add(e.nextID),
		Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid", Request: []byte(`{}`)}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		e.t.Fatal(err)
	}
	return j
}

func (e *env) status(id string) *job.Job {
	e.t.Helper()
	j, err := e.store.Job(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// messages drains the jobs queue and returns the job ids it held.
func (e *env) messages(url string) []string {
	var ids []string
	for {
		out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return ids
		}
		for _, m := range out.Messages {
			var msg queue.Message
			_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &msg)
			ids = append(ids, msg.JobID)
			_, _ = e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// steps takes the provider queue's messages at url.
func (e *env) steps(url string) []steps.Message {
	var out []steps.Message
	for {
		res, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			return out
		}
		for _, m := range res.Messages {
			var msg steps.Message
			_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &msg)
			out = append(out, msg)
			_, _ = e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func (e *env) run() sweeper.Report {
	e.t.Helper()
	r, err := e.sweep.Sweep(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func TestQueuedJobWithoutMessageIsSentAgainOnce(t *testing.T) {
	e := newEnv(t)
	e.workspace("ws_a", 5)
	j := e.create("ws_a")
	if r := e.run(); r.Requeued != 0 {
		t.Errorf("a fresh queued job was re-sent: %+v", r)
	}
	e.clock.T = t0.Add(3 * time.Minute)
	if r := e.run(); r.Requeued != 1 {
		t.Errorf("report %+v; want the idle job re-sent", r)
	}
	if got := e.messages(e.url); len(got) != 1 || got[0] != j.ID {
		t.Errorf("queue holds %v; want [%s]", got, j.ID)
	}
	e.clock.T = t0.Add(4 * time.Minute)
	if r := e.run(); r.Requeued != 0 {
		t.Errorf("re-sent again a minute later: %+v", r)
	}
}

func TestLateJobsTimeOutAndFreeTheirSlot(t *testing.T) {
	e := newEnv(t)
	e.workspace("ws_a", 1)
	running := e.create("ws_a")
	waiting := e.create("ws_a")
	// A worker holds the running job and then goes silent.
	lease := job.Lease{ID: "w1", Until: t0.Add(time.Hour)}
	if _, err := e.store.Transition(e.ctx, running, job.Change{To: job.Processing, Lease: &lease}, t0); err != nil {
		t.Fatal(err)
	}
	e.clock.T = t0.Add(29 * time.Minute)
	if r := e.run(); r.TimedOut != 0 {
		t.Fatalf("timed out before the deadline: %+v", r)
	}
	e.clock.T = t0.Add(30*time.Minute + time.Second)
	r := e.run()
	if r.TimedOut != 1 {
		t.Errorf("report %+v; want one timeout", r)
	}
	got := e.status(running.ID)
	if got.Status != job.Failed || got.Error == nil || got.Error.Code != "timeout" || got.CompletedAt == nil {
		t.Errorf("late job: %s %+v; want failed with timeout", got.Status, got.Error)
	}
	if w := e.status(waiting.ID); w.Status != job.Queued {
		t.Errorf("backlogged job after the timeout: %s; want queued", w.Status)
	}
	if ids := e.messages(e.url); len(ids) != 1 || ids[0] != waiting.ID {
		t.Errorf("queue holds %v; want the promoted job", ids)
	}
	stored, _ := slotsdb.New(e.store).StoredSlots(e.ctx, "ws_a")
	counted, _ := slotsdb.New(e.store).CountSlots(e.ctx, "ws_a")
	if stored != counted || stored != (slotsdb.Slots{Active: 1, Running: 1}) {
		t.Errorf("slots %+v, counted %+v; want 1 active, 1 running", stored, counted)
	}
}

func TestMissedPromotionIsMade(t *testing.T) {
	e := newEnv(t)
	e.workspace("ws_a", 1)
	first, second := e.create("ws_a"), e.create("ws_a")
	// The first job ends without a promotion (as if the writer crashed right after).
	if _, err := e.store.Transition(e.ctx, first, job.Change{To: job.Cancelled}, t0); err != nil {
		t.Fatal(err)
	}
	if r := e.run(); r.Promoted != 1 {
		t.Errorf("report %+v; want one promotion", r)
	}
	if got := e.status(second.ID).Status; got != job.Queued {
		t.Errorf("backlogged job: %s; want queued", got)
	}
}

func TestDeadLetteredJobFails(t *testing.T) {
	e := newEnv(t)
	e.workspace("ws_a", 5)
	j := e.create("ws_a")
	// A worker claimed it, and its attempts crashed.
	lease := job.Lease{ID: "crashed", Until: t0.Add(-time.Second)}
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Processing, Lease: &lease}, t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(queue.Message{JobID: j.ID})
	if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.dlq), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	if r := e.run(); r.DeadLettered != 1 {
		t.Errorf("report %+v; want one dead-lettered job", r)
	}
	got := e.status(j.ID)
	if got.Status != job.Failed || got.Error.Code != "internal" {
		t.Errorf("job %s %+v; want failed internal", got.Status, got.Error)
	}
	if left := e.messages(e.dlq); len(left) != 0 {
		t.Errorf("the DLQ still holds %v", left)
	}
}

// A stale duplicate of a job's message can reach the DLQ while a healthy
// attempt holds the job: the job is that attempt's to end, not the DLQ's.
func TestDeadLetteredJobWithAHeldLeaseIsLeftToItsWorker(t *testing.T) {
	e := newEnv(t)
	e.workspace("ws_a", 5)
	j := e.create("ws_a")
	lease := job.Lease{ID: "alive", Until: t0.Add(150 * time.Second)}
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Processing, Lease: &lease}, t0); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(queue.Message{JobID: j.ID})
	if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.dlq), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	e.clock.T = t0.Add(10 * time.Second)
	if r := e.run(); r.DeadLettered != 0 {
		t.Errorf("report %+v; want no job failed", r)
	}
	if got := e.status(j.ID); got.Status != job.Processing || got.Lease.ID != "alive" {
		t.Errorf("job %s (lease %q); want it still processing under its worker's lease", got.Status, got.Lease.ID)
	}
	done := 1.0
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Completed, Progress: &done, Holder: "alive"}, e.clock.T); err != nil {
		t.Errorf("the worker could not complete its job: %v", err)
	}
}

func TestARunningJobWhoseWorkerDiedIsSentAgain(t *testing.T) {
	e := newEnv(t)
	e.workspace("ws_a", 5)
	j := e.create("ws_a")
	lease := job.Lease{ID: "dead", Until: t0.Add(150 * time.Second)}
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Processing, Lease: &lease}, t0); err != nil {
		t.Fatal(err)
	}
	e.clock.T = t0.Add(3 * time.Minute) // the lease lapsed 30 s ago
	if r := e.run(); r.Requeued != 0 {
		t.Errorf("re-sent while its lease may still be in flight: %+v", r)
	}
	e.clock.T = t0.Add(5 * time.Minute)
	if r := e.run(); r.Requeued != 1 {
		t.Errorf("report %+v; want the abandoned job re-sent", r)
	}
	if got := e.messages(e.url); len(got) != 1 || got[0] != j.ID {
		t.Errorf("queue holds %v; want [%s]", got, j.ID)
	}
	if got := e.status(j.ID); got.Status != job.Processing {
		t.Errorf("the re-send changed the job: %s", got.Status)
	}
}

// A light job the light worker handed to the heavy lane lives there: when
// its heavy attempt dies, the sweeper sends it to the heavy queue, not back
// to the light worker (which would only hand it over again).
func TestAHandedOverJobIsSentAgainToItsNewLane(t *testing.T) {
	e := newEnv(t)
	light, _, err := queue.Create(e.ctx, e.sqs, testenv.UniqueName(t, "light"))
	if err != nil {
		t.Fatal(err)
	}
	e.sweep.Queue = queue.NewJobSender(e.sqs, e.url).WithLane(lifecycle.LaneLight, light)
	e.workspace("ws_a", 5)
	e.nextID += time.Millisecond
	j := &job.Job{ID: job.NewID(t0), WorkspaceID: "ws_a", CreatedAt: t0.Add(e.nextID), Lane: lifecycle.LaneLight,
		Endpoint: "/generate/enhance/vendor-a/standard-enhance", Request: []byte(`{"width":1024,"height":1024}`)}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		t.Fatal(err)
	}
	lease := job.Lease{ID: "light", Until: t0.Add(150 * time.Second)}
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Processing, Lease: &lease}, t0); err != nil {
		t.Fatal(err)
	}
	gone := job.Lease{ID: "light", Until: t0}
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Processing, Holder: "light", Lease: &gone, Lane: lifecycle.LaneHeavy}, t0); err != nil {
		t.Fatal(err)
	}
	heavy := job.Lease{ID: "heavy-died", Until: t0.Add(150 * time.Second)}
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Processing, Lease: &heavy}, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	e.clock.T = t0.Add(5 * time.Minute)
	if r := e.run(); r.Requeued != 1 {
		t.Errorf("report %+v; want the abandoned job re-sent", r)
	}
	if got := e.messages(e.url); len(got) != 1 || got[0] != j.ID {
		t.Errorf("heavy queue holds %v; want [%s]", got, j.ID)
	}
	if got := e.messages(light); len(got) != 0 {
		t.Errorf("light queue holds %v; want nothing: the job left that lane", got)
	}
}

// TestRoutedJobKeepsItsRoutesDeadline: a job routed to a model provider is
// re-sent to the provider queue, not the workers', and times out at its
// route's deadline, not the default 30 minutes. Its re-send asks for its
// submission (it is still queued), and its end hands the
// prediction's cancellation to the provider queue.
func TestRoutedJobKeepsItsRoutesDeadline(t *testing.T) {
	e := newEnv(t)
	pq, _, err := providerqueue.Create(e.ctx, e.sqs, testenv.UniqueName(t, "prov"))
	if err != nil {
		t.Fatal(err)
	}
	q := queue.NewJobSender(e.sqs, e.url).WithProviders(pq)
	e.sweep.Queue = q
	e.sweep.Lifecycle = &lifecycle.Ender{Store: e.store, Queue: q, Clock: e.clock, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	e.workspace("ws_r", 5)
	j := &job.Job{ID: job.NewID(e.clock.T), WorkspaceID: "ws_r", CreatedAt: e.clock.T,
		Endpoint: "/generate/image/vendor-b/model-e-4", Request: []byte(`{}`), Provider: "replicate", Deadline: time.Hour}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		t.Fatal(err)
	}
	e.clock.T = t0.Add(45 * time.Minute)
	r := e.run()
	if r.TimedOut != 0 || e.status(j.ID).Status != job.Queued {
		t.Fatalf("a routed job with a 60-minute deadline timed out at 45 minutes: %+v", r)
	}
	if got := e.steps(pq); len(got) != 1 || got[0] != (steps.Message{Kind: steps.Submit, JobID: j.ID}) {
		t.Fatalf("provider queue held %v; want the job's submission", got)
	}
	if got := e.messages(e.url); len(got) != 0 {
		t.Fatalf("the workers' queue held %v", got)
	}
	e.clock.T = t0.Add(61 * time.Minute)
	if r := e.run(); r.TimedOut != 1 {
		t.Fatalf("sweep %+v; want the job timed out at its route's deadline", r)
	}
	got := e.status(j.ID)
	if got.Status != job.Failed || got.Error.Code != job.CodeTimeout || !strings.Contains(got.Error.Message, "60 minutes") {
		t.Fatalf("job %s %+v", got.Status, got.Error)
	}
	if msgs := e.steps(pq); len(msgs) != 1 || msgs[0] != (steps.Message{Kind: steps.Cancel, JobID: j.ID}) {
		t.Fatalf("provider queue held %v after the timeout; want the cancellation's step", msgs)
	}
}

// Throttled invocations count toward maxReceiveCount: a message can reach
// the DLQ without any worker having run its job. That job is sent again,
// not failed.
func TestDeadLetteredJobNoWorkerClaimedIsSentAgain(t *testing.T) {
	e := newEnv(t)
	e.workspace("ws_a", 5)
	j := e.create("ws_a")
	body, _ := json.Marshal(queue.Message{JobID: j.ID})
	if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.dlq), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	if r := e.run(); r.DeadLettered != 0 || r.Requeued != 1 {
		t.Errorf("report %+v; want the job re-sent, none failed", r)
	}
	if got := e.status(j.ID); got.Status != job.Queued {
		t.Errorf("job %s; want still queued", got.Status)
	}
	if got := e.messages(e.url); len(got) != 1 || got[0] != j.ID {
		t.Errorf("jobs queue holds %v; want [%s]", got, j.ID)
	}
	if left := e.messages(e.dlq); len(left) != 0 {
		t.Errorf("the DLQ still holds %v", left)
	}
}

// Two sweeps never run at once: the second finds the lease held and does
// nothing; once the first has ended, the next one runs.
func TestSweepsDoNotOverlap(t *testing.T) {
	e := newEnv(t)
	e.sweep.Lease, e.sweep.LeaseFor = leasedb.New(e.store), sweeper.DefaultLeaseFor
	e.workspace("ws_a", 5)
	e.create("ws_a")
	e.clock.T = t0.Add(5 * time.Minute) // the job waited long enough to be re-sent

	// A sweep in progress holds the lease.
	held, err := leasedb.New(e.store).TakeLease(e.ctx, "sweeper", "running", e.clock.T.Add(time.Minute), e.clock.T)
	if err != nil || !held {
		t.Fatal(held, err)
	}
	if err := e.sweep.Handle(e.ctx, events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	if got := e.messages(e.url); len(got) != 0 {
		t.Errorf("an overlapping sweep re-sent %v", got)
	}
	if err := leasedb.New(e.store).ReleaseLease(e.ctx, "sweeper", "running", e.clock.T); err != nil {
		t.Fatal(err)
	}
	if err := e.sweep.Handle(e.ctx, events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	if got := e.messages(e.url); len(got) != 1 {
		t.Errorf("the next sweep re-sent %v; want the waiting job", got)
	}
	// And it gave the lease back.
	if ok, err := leasedb.New(e.store).TakeLease(e.ctx, "sweeper", "next", e.clock.T.Add(time.Minute), e.clock.T); err != nil || !ok {
		t.Errorf("lease after a sweep: %v %v; want free", ok, err)
	}
}
