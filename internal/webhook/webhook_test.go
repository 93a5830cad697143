package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/clock"
	"genjobs/internal/job"
	"genjobs/internal/netguard"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/testenv"
	"genjobs/internal/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fast is a compressed schedule: the real one's shape, in milliseconds.
var fast = []time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 15 * time.Millisecond, 20 * time.Millisecond, 25 * time.Millisecond,
	30 * time.Millisecond, 35 * time.Millisecond, 40 * time.Millisecond, 45 * time.Millisecond,
}

// fakeSigner stands in for the KMS signer here; package signing tests that.
type fakeSigner struct {
	mu     sync.Mutex
	claims []webhook.Claims
}

func (f *fakeSigner) WebhookToken(_ context.Context, c webhook.Claims) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims = append(f.claims, c)
	return "token-" + strconv.Itoa(len(f.claims)), nil
}

type env struct {
	t         *testing.T
	store     *store.Store
	sqs       *sqs.Client
	url, dlq  string
	signer    *fakeSigner
	loopback  *testenv.Loopback
	notifier  *webhook.Notifier
	deliverer *webhook.Deliverer
}

func newEnv(t *testing.T, guard *netguard.Guard, timeout time.Duration) *env {
	t.Helper()
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "wh")
	if err := schema.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store.New(db, table), sqs: testenv.SQS(t), signer: &fakeSigner{}}
	var err error
	if e.url, e.dlq, err = queue.CreateDeliveries(ctx, e.sqs, testenv.UniqueName(t, "whq")); err != nil {
		t.Fatal(err)
	}
	q := queue.NewDeliveries(e.sqs, e.url, e.dlq)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	e.loopback = testenv.LoopbackOnly(t)
	guard.Connect = e.loopback.Connect // a bug of the guard fails here instead of leaving the machine
	client := webhook.NewClient(guard.Transport())
	client.Timeout = timeout
	e.notifier = &webhook.Notifier{Store: deliveriesdb.New(e.store), Queue: q, Clock: clock.System{}, Log: log}
	e.deliverer = &webhook.Deliverer{
		Store: deliveriesdb.New(e.store), Queue: q, Sender: &webhook.Sender{Client: client, Signer: e.signer},
		Render:   func(_ context.Context, j *job.Job) ([]byte, error) { return json.Marshal(j.Record(nil)) },
		Schedule: fast, ClaimFor: webhook.DefaultClaimFor, Clock: clock.System{}, Log: log,
	}
	if err := accountsdb.New(e.store).CreateWorkspace(ctx, auth.Workspace{ID: "ws_a", MaxConcurrent: 20, MaxRunning: 20, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := accountsdb.New(e.store).TopUp(ctx, "ws_a", "pay", 10*billing.USD, time.Now()); err != nil {
		t.Fatal(err)
	}
	return e
}

// endedJob creates a job with a webhook and ends it; it returns the stream
// record the notifier gets for the end.
func (e *env) endedJob(url string) (*job.Job, events.DynamoDBEventRecord) {
	e.t.Helper()
	ctx := context.Background()
	now := time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: "ws_a", CreatedAt: now, Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid",
		Request: []byte(`{}`), BaseURL: "http://127.0.0.1:3000", WebhookURL: url, Price: 100_000}
	if err := e.store.CreateJob(ctx, j); err != nil {
		e.t.Fatal(err)
	}
	ended, err := e.store.Transition(ctx, j, job.Change{To: job.Completed}, now)
	if err != nil {
		e.t.Fatal(err)
	}
	s := events.NewStringAttribute
	rec := events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "100" + strconv.FormatInt(now.UnixNano(), 10),
		NewImage: map[string]events.DynamoDBAttributeValue{
			"PK": s("JOB#" + j.ID), "SK": s("JOB"), "job_id": s(j.ID), "workspace_id": s("ws_a"),
			"status": s("completed"), "webhook_url": s(url),
		},
		OldImage: map[string]events.DynamoDBAttributeValue{"status": s("processing")},
	}}
	return ended, rec
}

// pump plays the deliveries queue into the deliverer until done says so.
func (e *env) pump(done func() bool) {
	e.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			e.t.Fatal("the delivery did not finish in 20 s")
		}
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 2,
		})
		if err != nil {
			e.t.Fatal(err)
		}
		var ev events.SQSEvent
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), ReceiptHandle: aws.ToString(m.ReceiptHandle)})
		}
		resp, _ := e.deliverer.HandleSQS(ctx, ev)
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range ev.Records {
			if !failed[m.MessageId] {
				_, _ = e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.url), ReceiptHandle: aws.String(m.ReceiptHandle)})
			}
		}
	}
}

func (e *env) delivery(id string) *webhook.Delivery {
	e.t.Helper()
	d, err := deliveriesdb.New(e.store).Delivery(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) ended(id string) func() bool {
	return func() bool { return e.delivery(id).State != webhook.Pending }
}

type hit struct {
	header http.Header
	body   []byte
}

// receiver answers the statuses in turn (the last one for ever) and keeps
// what it got.
func receiver(t *testing.T, statuses ...int) (*httptest.Server, func() []hit) {
	var mu sync.Mutex
	var hits []hit
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(hits)
		hits = append(hits, hit{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(statuses[min(n, len(statuses)-1)])
	}))
	t.Cleanup(srv.Close)
	return srv, func() []hit {
		mu.Lock()
		defer mu.Unlock()
		return append([]hit(nil), hits...)
	}
}

func TestRetriedUntilTheReceiverAccepts(t *testing.T) {
	e := newEnv(t, &netguard.Guard{AllowPrivate: true}, time.Second)
	srv, hits := receiver(t, 503, 503, 204)
	j, rec := e.endedJob(srv.URL + "/hooks?a=1,2")
	if resp, err := e.notifier.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("notifier: %+v %v", resp, err)
	}
	e.pump(e.ended(j.ID))
	d := e.delivery(j.ID)
	got := hits()
	if d.State != webhook.Succeeded || len(got) != 3 || len(d.Attempts) != 3 {
		t.Fatalf("state %s, %d requests, %d attempts; want succeeded after 3", d.State, len(got), len(d.Attempts))
	}
	want, _ := json.Marshal(j.Record(nil))
	for i, h := range got {
		if id := h.header.Get("X-Service-Webhook-Id"); id != d.ID {
			t.Errorf("attempt %d: webhook id %q; want the stable %q", i+1, id, d.ID)
		}
		if sig := h.header.Get("X-Service-Webhook-Signature"); sig != "token-"+strconv.Itoa(i+1) {
			t.Errorf("attempt %d: signature %q; want a fresh one", i+1, sig)
		}
		if h.header.Get("Content-Type") != "application/json" || string(h.body) != string(want) {
			t.Errorf("attempt %d: %s %s", i+1, h.header.Get("Content-Type"), h.body)
		}
		if ts := h.header.Get("X-Service-Webhook-Timestamp"); ts == "" {
			t.Errorf("attempt %d: no timestamp", i+1)
		}
	}
	c := e.signer.claims[0]
	if c.Audience != srv.URL+"/hooks?a=1,2" || c.Subject != j.ID || c.ID != d.ID || c.Issuer != "http://127.0.0.1:3000" {
		t.Errorf("claims %+v", c)
	}
	if a := d.Attempts[0]; a.StatusCode != 503 || a.Error == "" || a.NextAt == nil {
		t.Errorf("first attempt %+v", a)
	}
	if a := d.Attempts[2]; a.StatusCode != 204 || a.Error != "" || a.NextAt != nil {
		t.Errorf("last attempt %+v", a)
	}
}

func TestAReceiverThatNeverAnswersGetsTheWholeSchedule(t *testing.T) {
	e := newEnv(t, &netguard.Guard{AllowPrivate: true}, 100*time.Millisecond)
	var calls atomic.Int32
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	j, rec := e.endedJob(srv.URL)
	if _, err := e.notifier.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}); err != nil {
		t.Fatal(err)
	}
	e.pump(e.ended(j.ID))
	d := e.delivery(j.ID)
	if d.State != webhook.Failed || len(d.Attempts) != 1+len(fast) || calls.Load() != int32(1+len(fast)) {
		t.Fatalf("state %s, %d attempts, %d calls; want failed after %d", d.State, len(d.Attempts), calls.Load(), 1+len(fast))
	}
	if d.Attempts[0].Error != "no answer within 10 s" || d.Attempts[0].StatusCode != 0 {
		t.Errorf("attempt %+v", d.Attempts[0])
	}
	// Parked on the dead-letter queue.
	out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.dlq), WaitTimeSeconds: 1})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("dead letters: %v %v", out, err)
	}
	var p struct {
		JobID     string `json:"job_id"`
		WebhookID string `json:"webhook_id"`
	}
	if json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &p); p.JobID != j.ID || p.WebhookID != d.ID {
		t.Errorf("parked %s", aws.ToString(out.Messages[0].Body))
	}
}

func TestGoneStopsAndRetryAfterIsHonoured(t *testing.T) {
	e := newEnv(t, &netguard.Guard{AllowPrivate: true}, time.Second)
	srv, hits := receiver(t, 410)
	j, rec := e.endedJob(srv.URL)
	_, _ = e.notifier.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}})
	e.pump(e.ended(j.ID))
	if d := e.delivery(j.ID); d.State != webhook.Failed || len(hits()) != 1 {
		t.Errorf("410: %s after %d requests; want failed after 1", d.State, len(hits()))
	}

	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		n          int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, 5 * time.Second},
		{1, time.Minute, time.Minute},     // later than the schedule: honoured
		{2, time.Second, 5 * time.Minute}, // sooner: the schedule wins
		{3, 48 * time.Hour, 24 * time.Hour},
	} {
		st, next := webhook.Next(tc.n, webhook.Result{StatusCode: 503, RetryAfter: tc.retryAfter}, now, webhook.Schedule)
		if st != webhook.Pending || next.Sub(now) != tc.want {
			t.Errorf("attempt %d, Retry-After %s: %s at +%s; want +%s", tc.n, tc.retryAfter, st, next.Sub(now), tc.want)
		}
	}
	if st, _ := webhook.Next(10, webhook.Result{StatusCode: 500}, now, webhook.Schedule); st != webhook.Failed {
		t.Errorf("after the 10th attempt: %s; want failed", st)
	}
}

func TestPrivateDestinationsAreNeverContacted(t *testing.T) {
	e := newEnv(t, &netguard.Guard{}, time.Second)
	for _, url := range []string{"http://169.254.169.254/latest/meta-data", "https://10.1.2.3/hook", "http://127.0.0.1:9/hook"} {
		j, rec := e.endedJob(url)
		_, _ = e.notifier.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}})
		e.pump(e.ended(j.ID))
		d := e.delivery(j.ID)
		if d.State != webhook.Failed || len(d.Attempts) != 1 || d.Attempts[0].Error != "the destination address is not allowed" {
			t.Errorf("%s: %s, %+v; want refused once, never retried", url, d.State, d.Attempts)
		}
	}
	if seen := e.loopback.Seen(); len(seen) != 0 {
		t.Errorf("the guard let connections to %v be tried", seen)
	}
}

func TestReplayedStreamRecordDeliversOnce(t *testing.T) {
	e := newEnv(t, &netguard.Guard{AllowPrivate: true}, time.Second)
	srv, hits := receiver(t, 200)
	j, rec := e.endedJob(srv.URL)
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}
	_, _ = e.notifier.HandleStream(context.Background(), batch)
	first := e.delivery(j.ID).ID
	_, _ = e.notifier.HandleStream(context.Background(), batch) // after a crash, the stream sends it again
	if again := e.delivery(j.ID).ID; again != first {
		t.Errorf("webhook id %s, then %s after the replay", first, again)
	}
	e.pump(e.ended(j.ID))
	// Whatever the replay queued is dropped: still one request.
	quiet := time.Now().Add(1500 * time.Millisecond)
	e.pump(func() bool { return time.Now().After(quiet) })
	if n := len(hits()); n != 1 {
		t.Errorf("%d requests; want 1", n)
	}
	if e.delivery(j.ID).State != webhook.Succeeded {
		t.Error("not succeeded")
	}
	// A record the filter should have dropped starts nothing.
	_, rec2 := e.endedJob(srv.URL)
	rec2.Change.OldImage["status"] = events.NewStringAttribute("failed")
	_, _ = e.notifier.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec2}})
	if _, err := deliveriesdb.New(e.store).Delivery(context.Background(), rec2.Change.NewImage["job_id"].String()); err != webhook.ErrNotFound {
		t.Errorf("terminal -> terminal change started a delivery: %v", err)
	}
}

// The delivery log's `at` is when an attempt started, not when its answer
// came: a receiver that takes its time is entered at the time of the POST,
// with the end kept beside it.
func TestAnAttemptIsLoggedAtItsStart(t *testing.T) {
	e := newEnv(t, &netguard.Guard{AllowPrivate: true}, 5*time.Second)
	var mu sync.Mutex
	var reached time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached = time.Now()
		mu.Unlock()
		time.Sleep(300 * time.Millisecond) // a slow receiver; no timing is asserted
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	j, rec := e.endedJob(srv.URL + "/slow")
	_, _ = e.notifier.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}})
	e.pump(e.ended(j.ID))
	a := e.delivery(j.ID).Attempts[0]
	mu.Lock()
	defer mu.Unlock()
	if a.At.After(reached) || !a.EndedAt.After(reached) {
		t.Errorf("attempt at %s, ended %s; the receiver was reached at %s, between them",
			a.At.Format(time.RFC3339Nano), a.EndedAt.Format(time.RFC3339Nano), reached.Format(time.RFC3339Nano))
	}
}
