package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/clock"
	"genjobs/internal/job"
	"genjobs/internal/netguard"
	"genjobs/internal/queue"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/testenv"
	"genjobs/internal/webhook"
)

// hookEnv is a table, its deliveries queue on the tests' fauxqs (named as
// make run names it, after the table), and the deliverer of make run on
// them, with a 5-minute wait before the first retry.
type hookEnv struct {
	*env
	sqs       *sqs.Client
	queueURL  string
	deliverer *webhook.Deliverer
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	ctx := context.Background()
	e := &hookEnv{env: newEnv(t), sqs: testenv.SQS(t)}
	var dlq string
	var err error
	if e.queueURL, dlq, err = queue.CreateDeliveries(ctx, e.sqs, e.table+"-deliveries"); err != nil {
		t.Fatal(err)
	}
	loopback := testenv.LoopbackOnly(t)
	guard := &netguard.Guard{AllowPrivate: true, Connect: loopback.Connect}
	e.deliverer = &webhook.Deliverer{
		Store: deliveriesdb.New(e.store()), Queue: queue.NewDeliveries(e.sqs, e.queueURL, dlq),
		Sender:   &webhook.Sender{Client: webhook.NewClient(guard.Transport()), Signer: signer{}},
		Render:   func(_ context.Context, j *job.Job) ([]byte, error) { return json.Marshal(j.Record(nil)) },
		Schedule: []time.Duration{5 * time.Minute, 30 * time.Minute}, ClaimFor: webhook.DefaultClaimFor,
		Clock: clock.System{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
	if err := accountsdb.New(e.store()).CreateWorkspace(ctx, auth.Workspace{ID: "ws_a", MaxConcurrent: 20, MaxRunning: 20, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := accountsdb.New(e.store()).TopUp(ctx, "ws_a", "pay", 10*billing.USD, time.Now()); err != nil {
		t.Fatal(err)
	}
	return e
}

// signer stands in for the KMS signer: package signing tests that one.
type signer struct{}

func (signer) WebhookToken(context.Context, webhook.Claims) (string, error) { return "token", nil }

// job creates a job of workspace ws_a with webhook URL hook ("" for none),
// ended when end says so.
func (e *hookEnv) job(t *testing.T, hook string, end bool) *job.Job {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: "ws_a", CreatedAt: now, Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid",
		Request: []byte(`{}`), BaseURL: "http://127.0.0.1:3000", WebhookURL: hook, Price: 100_000}
	if err := e.store().CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if !end {
		return j
	}
	ended, err := e.store().Transition(ctx, j, job.Change{To: job.Completed}, now)
	if err != nil {
		t.Fatal(err)
	}
	return ended
}

// start does what the notifier does when the job ends: the delivery and
// the message of its first attempt.
func (e *hookEnv) start(t *testing.T, j *job.Job) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	_, err := deliveriesdb.New(e.store()).CreateDelivery(ctx, &webhook.Delivery{JobID: j.ID, WorkspaceID: j.WorkspaceID, ID: webhook.NewID(),
		URL: j.WebhookURL, State: webhook.Pending, NextAt: now, CreatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.deliverer.Queue.Schedule(ctx, j.ID, 1, 0); err != nil {
		t.Fatal(err)
	}
}

// pump plays the visible messages of the deliveries queue into the
// deliverer, as make run's poller does, until the delivery has n attempts
// (bounded: 20 s).
func (e *hookEnv) pump(t *testing.T, jobID string, n int) *webhook.Delivery {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := deliveriesdb.New(e.store()).Delivery(ctx, jobID)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Attempts) >= n {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt %d of job %s's webhook not made in 20 s: %d made, %s, due %s", n, jobID, len(d.Attempts), d.State, d.NextAt)
		}
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		var ev events.SQSEvent
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body)})
		}
		resp, _ := e.deliverer.HandleSQS(ctx, ev)
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				_, _ = e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queueURL), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}
}

// receiver answers the statuses in turn (the last one for ever) and counts
// its requests.
func receiver(t *testing.T, statuses ...int) (*httptest.Server, func() int) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		status := statuses[min(n, len(statuses)-1)]
		n++
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// cli is the CLI as an operator runs it on this machine: nothing set but
// the emulators' ports, the queue found by the table's name.
func (e *hookEnv) cli(t *testing.T) *cli {
	u, err := url.Parse(testenv.SQSEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	return localCLI(t, map[string]string{"FAUXQS_PORT": u.Port()})
}

// A webhook whose first attempt failed waits 5 minutes for its retry, and
// one the receiver refused with 410 has failed for good: redeliver sends
// either at once, as the next attempt, through the deliverer.
func TestWebhookRedeliverSendsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first int
		was   webhook.State
	}{
		{"waiting for its retry", 503, webhook.Pending},
		{"failed", 410, webhook.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newHookEnv(t)
			srv, requests := receiver(t, tc.first, 204)
			j := e.job(t, srv.URL+"/hooks?secret=s3cr3t", true)
			e.start(t, j)
			if d := e.pump(t, j.ID, 1); d.State != tc.was || requests() != 1 {
				t.Fatalf("after the first attempt: %s, %d requests; want %s after 1", d.State, requests(), tc.was)
			}

			args := []string{"--table", e.table, "webhook", "redeliver", "--job", j.ID}
			out := wantOK(t, invoke(e.cli(t), args...), args)
			host := strings.TrimPrefix(srv.URL, "http://")
			if out["job_id"] != j.ID || out["attempt"] != float64(2) || out["host"] != host || out["was"] != string(tc.was) {
				t.Errorf("printed %v; want job %s, attempt 2, host %s, was %s", out, j.ID, host, tc.was)
			}
			if b, _ := json.Marshal(out); strings.Contains(string(b), "s3cr3t") {
				t.Errorf("printed %s: the URL's query is the receiver's secret", b)
			}

			d := e.pump(t, j.ID, 2)
			if d.State != webhook.Succeeded || requests() != 2 {
				t.Fatalf("after the redelivery: %s, %d requests; want delivered by the second", d.State, requests())
			}
			if a := d.Attempts[1]; a.StatusCode != 204 {
				t.Errorf("attempt 2 answered %d; want the receiver's 204", a.StatusCode)
			}
			// A delivered webhook is not sent again.
			wantFail(t, invoke(e.cli(t), args...), 1, "job "+j.ID+"'s webhook was already delivered (attempt 2 answered 204)", args)
			if requests() != 2 {
				t.Errorf("%d requests; want 2", requests())
			}
		})
	}
}

func TestWebhookRedeliverRefuses(t *testing.T) {
	e := newHookEnv(t)
	srv, requests := receiver(t, 204)
	unknown := job.NewID(time.Now())
	without := e.job(t, "", true)
	running := e.job(t, srv.URL+"/hooks", false)
	sent := e.job(t, srv.URL+"/hooks", true)
	e.start(t, sent)
	e.pump(t, sent.ID, 1)

	for _, tc := range []struct {
		id, want string
	}{
		{unknown, "job " + unknown + " not found"},
		{without.ID, "job " + without.ID + " has no webhook delivery: it was created without X-Webhook-URL"},
		{running.ID, "job " + running.ID + " has no webhook delivery yet: it is queued"},
		{sent.ID, "job " + sent.ID + "'s webhook was already delivered (attempt 1 answered 204); nothing to send"},
	} {
		e.fails(t, 1, tc.want, "webhook", "redeliver", "--job", tc.id)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"webhook", "redeliver"}, "webhook redeliver: --job is required"},
		{[]string{"webhook", "redeliver", sent.ID}, `unexpected argument "` + sent.ID + `"`},
		{[]string{"webhook", "redeliver", "--job", "job_123"}, `--job "job_123" is not a job id`},
		{[]string{"--aws", "--table", "t", "webhook", "redeliver", "--job", sent.ID}, "with --aws, give --stack NAME"},
	} {
		e.fails(t, 2, tc.want, tc.args...)
	}
	if requests() != 1 {
		t.Errorf("%d requests; want the first delivery's only", requests())
	}
}

// Without its queue (fauxqs down, or the queue missing) the command changes
// nothing: the delivery keeps its schedule.
func TestWebhookRedeliverWithoutTheQueue(t *testing.T) {
	e := newHookEnv(t)
	srv, _ := receiver(t, 503)
	j := e.job(t, srv.URL+"/hooks", true)
	e.start(t, j)
	before := e.pump(t, j.ID, 1)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	args := []string{"--table", e.table, "webhook", "redeliver", "--job", j.ID}
	wantFail(t, invoke(localCLI(t, map[string]string{"FAUXQS_PORT": closed}), args...), 1,
		"fauxqs (the local SQS) is not running on 127.0.0.1:"+closed, args)
	if _, err := e.sqs.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(e.queueURL)}); err != nil {
		t.Fatal(err)
	}
	wantFail(t, invoke(e.cli(t), args...), 1, "queue "+e.table+"-deliveries does not exist on fauxqs", args)
	after, err := deliveriesdb.New(e.store()).Delivery(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !after.NextAt.Equal(before.NextAt) || len(after.Attempts) != 1 {
		t.Errorf("a refused redelivery moved the delivery: due %s, %d attempts; want %s, 1", after.NextAt, len(after.Attempts), before.NextAt)
	}
}

// With --aws the queue is the stack's DeliveriesQueue: found through
// CloudFormation, here moto's, with AWS's own client configuration.
func TestWebhookRedeliverFindsTheStacksQueue(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", testenv.MotoEndpoint())
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	stack := testenv.UniqueName(t, "rd")
	_, err = cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(stack),
		TemplateBody: aws.String(`{"Resources":{"DeliveriesQueue":{"Type":"AWS::SQS::Queue"},"JobsQueue":{"Type":"AWS::SQS::Queue"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stack)}) })
	res, err := cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String(stack), LogicalResourceId: aws.String("JobsQueue")})
	if err != nil {
		t.Fatal(err)
	}
	jobsQueue := aws.ToString(res.StackResourceDetail.PhysicalResourceId)

	_, got, err := stackDeliveries(ctx, stack)
	if err != nil || !strings.Contains(got, "/"+stack+"-DeliveriesQueue-") || got == jobsQueue {
		t.Errorf("the deliveries queue of stack %s: %q, %v; want its DeliveriesQueue's URL", stack, got, err)
	}
	if _, _, err := stackDeliveries(ctx, stack+"-gone"); err == nil || !strings.Contains(err.Error(), "stack "+stack+"-gone has no DeliveriesQueue in AWS (us-east-1)") {
		t.Errorf("a stack that does not exist: %v; want it named", err)
	}
}
