package triggers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"genjobs/infra/local/sam"
	"genjobs/internal/queue"
	"genjobs/internal/testenv"
)

// workerTemplate is the worker's shape in template.yaml, with a one-second
// timeout and visibility timeout so that retries come back fast.
func workerTemplate(responseTypes string, maxReceiveCount int) string {
	redrive := ""
	if maxReceiveCount > 0 {
		redrive = fmt.Sprintf(`
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt JobsDLQ.Arn
        maxReceiveCount: %d`, maxReceiveCount)
	}
	return `
Resources:
  JobsQueue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 1` + redrive + `
  JobsDLQ:
    Type: AWS::SQS::Queue
  WorkerFunction:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 1
      Events:
        Jobs:
          Type: SQS
          Properties:
            Queue: !GetAtt JobsQueue.Arn
            FunctionResponseTypes: ` + responseTypes + `
`
}

// delivery is one record as a handler saw it.
type delivery struct {
	body, id, receiveCount string
	record                 events.SQSMessage
	batch                  int // which invocation
	deadline               time.Duration
	requestID              string
}

// recorder is an SQS handler that records what it is given and answers
// with answer(invocation number, event).
type recorder struct {
	mu         sync.Mutex
	deliveries []delivery
	batches    int
	answer     func(n int, ev events.SQSEvent) (events.SQSEventResponse, error)
}

func (r *recorder) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	r.mu.Lock()
	r.batches++
	n := r.batches
	dl, _ := ctx.Deadline()
	lc, _ := lambdacontext.FromContext(ctx)
	for _, rec := range ev.Records {
		d := delivery{body: rec.Body, id: rec.MessageId, receiveCount: rec.Attributes["ApproximateReceiveCount"], record: rec, batch: n, deadline: time.Until(dl)}
		if lc != nil {
			d.requestID = lc.AwsRequestID
		}
		r.deliveries = append(r.deliveries, d)
	}
	r.mu.Unlock()
	return r.answer(n, ev)
}

func (r *recorder) all() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.deliveries...)
}

// counts gives how often each body was delivered, and the receive counts
// it came with: "a:1 b:1,2".
func (r *recorder) counts() string {
	seen := map[string][]string{}
	for _, d := range r.all() {
		seen[d.body] = append(seen[d.body], d.receiveCount)
	}
	var out []string
	for body, counts := range seen {
		out = append(out, body+":"+strings.Join(counts, ","))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func (r *recorder) delivered(body string) int {
	n := 0
	for _, d := range r.all() {
		if d.body == body {
			n++
		}
	}
	return n
}

func failures(ids ...string) events.SQSEventResponse {
	var r events.SQSEventResponse
	for _, id := range ids {
		r.BatchItemFailures = append(r.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	return r
}

// TestBatchOutcomes plays Lambda's rules on what a batch's outcome deletes:
// each case's first invocation answers as given, later ones succeed; the
// messages that were not deleted come back once their visibility timeout
// passes, the others never do.
func TestBatchOutcomes(t *testing.T) {
	cases := []struct {
		name          string
		responseTypes string
		first         func(ids map[string]string) (events.SQSEventResponse, error)
		want          string // deliveries per body, with their receive counts
		log           string // the log line the failure leaves
	}{{
		name:          "one item reported failed: only it comes back",
		responseTypes: "[ReportBatchItemFailures]",
		first:         func(ids map[string]string) (events.SQSEventResponse, error) { return failures(ids["b"]), nil },
		want:          "a:1 b:1,2 c:1",
		log:           "batch items failed",
	}, {
		name:          "handler error: the whole batch comes back",
		responseTypes: "[ReportBatchItemFailures]",
		first:         func(map[string]string) (events.SQSEventResponse, error) { return failures(), errors.New("boom") },
		want:          "a:1,2 b:1,2 c:1,2",
		log:           "invocation failed",
	}, {
		name:          "handler error without ReportBatchItemFailures: the whole batch comes back",
		responseTypes: "[]",
		first:         func(map[string]string) (events.SQSEventResponse, error) { return failures(), errors.New("boom") },
		want:          "a:1,2 b:1,2 c:1,2",
		log:           "invocation failed",
	}, {
		name:          "panic: the whole batch comes back",
		responseTypes: "[ReportBatchItemFailures]",
		first:         func(map[string]string) (events.SQSEventResponse, error) { panic("handler bug") },
		want:          "a:1,2 b:1,2 c:1,2",
		log:           "invocation failed",
	}, {
		name:          "empty item identifier: the whole batch comes back",
		responseTypes: "[ReportBatchItemFailures]",
		first:         func(ids map[string]string) (events.SQSEventResponse, error) { return failures(ids["a"], ""), nil },
		want:          "a:1,2 b:1,2 c:1,2",
		log:           "names a message not in the batch",
	}, {
		name:          "unknown item identifier: the whole batch comes back",
		responseTypes: "[ReportBatchItemFailures]",
		first:         func(map[string]string) (events.SQSEventResponse, error) { return failures("not-a-message-id"), nil },
		want:          "a:1,2 b:1,2 c:1,2",
		log:           "names a message not in the batch",
	}, {
		name:          "failures reported without ReportBatchItemFailures: ignored, all deleted",
		responseTypes: "[]",
		first:         func(ids map[string]string) (events.SQSEventResponse, error) { return failures(ids["b"]), nil },
		want:          "a:1 b:1 c:1",
	}, {
		name:          "success: all deleted",
		responseTypes: "[ReportBatchItemFailures]",
		first:         func(map[string]string) (events.SQSEventResponse, error) { return failures(), nil },
		want:          "a:1 b:1 c:1",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tpl := parse(t, workerTemplate(c.responseTypes, 0))
			urls := createQueues(t, tpl)
			// Sent before the poller starts, so that its first receive
			// takes all three in one batch.
			ids := send(t, urls["JobsQueue"], "a", "b", "c")
			rec := &recorder{answer: func(n int, ev events.SQSEvent) (events.SQSEventResponse, error) {
				if n == 1 {
					return c.first(ids)
				}
				return failures(), nil
			}}
			log, logs := newLog()
			run(t, tpl, map[string]Handlers{"WorkerFunction": {SQS: rec.handle}},
				Options{SQS: testenv.SQS(t), QueueURL: resolver(urls), Pollers: 1, PollWait: time.Second, Log: log})

			wantDeliveries := strings.Count(c.want, ",") + 3
			eventually(t, "every expected delivery happened and nothing is left on the queue", func() bool {
				return len(rec.all()) >= wantDeliveries && remaining(t, urls["JobsQueue"]) == 0
			})
			if got := rec.counts(); got != c.want {
				t.Errorf("deliveries %s; want %s", got, c.want)
			}
			first := rec.all()[:3]
			for _, d := range first {
				if d.batch != 1 {
					t.Fatalf("the three messages came in several batches: %+v", rec.all())
				}
			}
			if c.log == "" {
				if s := logs.String(); s != "" {
					t.Errorf("a success logged: %s", s)
				}
				return
			}
			lines := logs.lines(c.log)
			if len(lines) != 1 {
				t.Fatalf("want one %q log line; logs:\n%s", c.log, logs)
			}
			l := lines[0]
			wantIDs := fmt.Sprint([]any{ids["a"], ids["b"], ids["c"]})
			if c.want == "a:1 b:1,2 c:1" {
				wantIDs = fmt.Sprint([]any{ids["b"]})
			}
			if l["function"] != "WorkerFunction" || l["event"] != "Jobs" || fmt.Sprint(l["message_ids"]) != wantIDs || l["request_id"] != first[0].requestID {
				t.Errorf("log line %v; want function WorkerFunction, event Jobs, message_ids %s, request_id %s", l, wantIDs, first[0].requestID)
			}
		})
	}
}

func TestEventIsLambdas(t *testing.T) {
	tpl := parse(t, workerTemplate("[ReportBatchItemFailures]", 0))
	urls := createQueues(t, tpl)
	ctx := context.Background()
	_, err := testenv.SQS(t).SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(urls["JobsQueue"]),
		MessageBody: aws.String(`{"job_id":"j1"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("3d")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{answer: func(int, events.SQSEvent) (events.SQSEventResponse, error) { return failures(), nil }}
	run(t, tpl, map[string]Handlers{"WorkerFunction": {SQS: rec.handle}},
		Options{SQS: testenv.SQS(t), QueueURL: resolver(urls), PollWait: time.Second})
	eventually(t, "the message is handled", func() bool { return len(rec.all()) == 1 && remaining(t, urls["JobsQueue"]) == 0 })

	d := rec.all()[0]
	arn, err := QueueARN(ctx, testenv.SQS(t), urls["JobsQueue"])
	if err != nil {
		t.Fatal(err)
	}
	r := d.record
	if r.Body != `{"job_id":"j1"}` || r.MessageId == "" || r.ReceiptHandle == "" || r.Md5OfBody == "" ||
		r.EventSource != "aws:sqs" || r.EventSourceARN != arn || r.AWSRegion != "us-east-1" {
		t.Errorf("record %+v; queue ARN %s", r, arn)
	}
	for _, a := range []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} {
		if r.Attributes[a] == "" {
			t.Errorf("attribute %s missing: %v", a, r.Attributes)
		}
	}
	if v := r.MessageAttributes["kind"]; v.DataType != "String" || aws.ToString(v.StringValue) != "3d" {
		t.Errorf("message attributes %+v", r.MessageAttributes)
	}
	// The function's Timeout: 1 is the invocation's deadline.
	if d.deadline <= 0 || d.deadline > time.Second {
		t.Errorf("the handler had %s left; want at most the function's 1 s timeout", d.deadline)
	}
	if len(d.requestID) != 36 {
		t.Errorf("lambdacontext request id %q", d.requestID)
	}
}

func TestInvocationPastTheTimeoutIsAbandoned(t *testing.T) {
	tpl := parse(t, workerTemplate("[ReportBatchItemFailures]", 0))
	urls := createQueues(t, tpl)
	ids := send(t, urls["JobsQueue"], "slow")
	returned := make(chan struct{})
	rec := &recorder{answer: func(n int, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if n == 1 {
			// A handler that overruns its deadline and then claims success:
			// Lambda would have stopped it, so the success must not count.
			time.Sleep(1500 * time.Millisecond)
			close(returned)
		}
		return failures(), nil
	}}
	log, logs := newLog()
	run(t, tpl, map[string]Handlers{"WorkerFunction": {SQS: rec.handle}},
		Options{SQS: testenv.SQS(t), QueueURL: resolver(urls), Pollers: 1, PollWait: time.Second, Log: log})

	eventually(t, "the message comes back and is handled", func() bool {
		return rec.delivered("slow") == 2 && remaining(t, urls["JobsQueue"]) == 0
	})
	if got := rec.counts(); got != "slow:1,2" {
		t.Errorf("deliveries %s; want slow:1,2", got)
	}
	<-returned
	lines := logs.lines("abandoned")
	if len(lines) != 1 || lines[0]["function"] != "WorkerFunction" || fmt.Sprint(lines[0]["message_ids"]) != fmt.Sprint([]any{ids["slow"]}) {
		t.Errorf("want one abandon line naming WorkerFunction and %s; logs:\n%s", ids["slow"], logs)
	}
}

func TestFauxqsRedrivesTheJobsQueueByItself(t *testing.T) {
	// The jobs queue exactly as the local stack makes it (queue.Create):
	// fauxqs must move a message received MaxReceiveCount times to the DLQ
	// on the next receive, as SQS does, for the poller leaves that to it.
	ctx := context.Background()
	client := testenv.SQS(t)
	url, dlqURL, err := queue.Create(ctx, client, testenv.UniqueName(t, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, u := range []string{url, dlqURL} {
			_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	ids := send(t, url, "poison")
	receive := func(u string) []types.Message {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(u), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			// Visible again at once rather than after the queue's 720 s.
			if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(u), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
			}); err != nil {
				t.Fatal(err)
			}
		}
		return out.Messages
	}
	for i := 1; i <= queue.MaxReceiveCount; i++ {
		got := receive(url)
		if len(got) != 1 || got[0].Attributes["ApproximateReceiveCount"] != fmt.Sprint(i) {
			t.Fatalf("receive %d: %+v", i, got)
		}
	}
	if got := receive(url); len(got) != 0 {
		t.Fatalf("receive %d still delivered the message: %+v", queue.MaxReceiveCount+1, got)
	}
	got := receive(dlqURL)
	if len(got) != 1 || *got[0].MessageId != ids["poison"] || *got[0].Body != "poison" {
		t.Fatalf("the DLQ holds %+v; want the message %s", got, ids["poison"])
	}
}

func TestMessageFailingMaxReceiveCountTimesLandsInTheDLQ(t *testing.T) {
	tpl := parse(t, workerTemplate("[ReportBatchItemFailures]", 2))
	urls := createQueues(t, tpl)
	ids := send(t, urls["JobsQueue"], "poison", "fine")
	rec := &recorder{answer: func(n int, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var failed []string
		for _, r := range ev.Records {
			if r.Body == "poison" {
				failed = append(failed, r.MessageId)
			}
		}
		return failures(failed...), nil
	}}
	log, logs := newLog()
	run(t, tpl, map[string]Handlers{"WorkerFunction": {SQS: rec.handle}},
		Options{SQS: testenv.SQS(t), QueueURL: resolver(urls), PollWait: time.Second, Log: log})

	client := testenv.SQS(t)
	var dead []types.Message
	eventually(t, "the poison message is in the DLQ", func() bool {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(urls["JobsDLQ"]), WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, out.Messages...)
		return len(dead) > 0
	})
	if len(dead) != 1 || *dead[0].MessageId != ids["poison"] {
		t.Fatalf("DLQ holds %+v; want only %s", dead, ids["poison"])
	}
	if remaining(t, urls["JobsQueue"]) != 0 {
		t.Error("messages are left on the jobs queue")
	}
	// maxReceiveCount: 2 deliveries to the function, then the DLQ.
	if got := rec.counts(); got != "fine:1 poison:1,2" {
		t.Errorf("deliveries %s; want fine:1 poison:1,2", got)
	}
	if n := len(logs.lines("batch items failed")); n != 2 {
		t.Errorf("%d failure log lines; want 2:\n%s", n, logs)
	}
}

func TestStopLetsTheInvocationInFlightFinish(t *testing.T) {
	// A timeout long enough that the stop, not the timeout, is what the
	// handler lives through.
	tpl := parse(t, strings.ReplaceAll(strings.ReplaceAll(workerTemplate("[ReportBatchItemFailures]", 0),
		"Timeout: 1\n", "Timeout: 30\n"), "VisibilityTimeout: 1", "VisibilityTimeout: 30"))
	urls := createQueues(t, tpl)
	send(t, urls["JobsQueue"], "m")
	started, release := make(chan struct{}), make(chan struct{})
	var handlerReturned bool
	var handlerCtxErr error
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		close(started)
		<-release
		handlerCtxErr = ctx.Err()
		handlerReturned = true
		return failures(), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := Start(ctx, tpl, map[string]Handlers{"WorkerFunction": {SQS: handler}},
		Options{SQS: testenv.SQS(t), QueueURL: resolver(urls), PollWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	stopped := make(chan struct{})
	go func() { r.Wait(); close(stopped) }()
	close(release)
	<-stopped
	if !handlerReturned {
		t.Fatal("Wait returned before the invocation in flight")
	}
	if handlerCtxErr != nil {
		t.Errorf("stopping the runner cancelled the invocation's context: %v", handlerCtxErr)
	}
	if n := remaining(t, urls["JobsQueue"]); n != 0 {
		t.Errorf("the finished invocation's message is still on the queue (%d)", n)
	}
}

func TestBatchingWindowGathersBatchesBiggerThanOneReceive(t *testing.T) {
	// SQS gives at most 10 messages per receive; Lambda gathers a BatchSize
	// of 12 from two receives within the batching window.
	text := strings.Replace(workerTemplate("[]", 0), "FunctionResponseTypes: []",
		"BatchSize: 12\n            MaximumBatchingWindowInSeconds: 60", 1)
	tpl := parse(t, text)
	urls := createQueues(t, tpl)
	var bodies []string
	for i := range 12 {
		bodies = append(bodies, fmt.Sprint("m", i))
	}
	send(t, urls["JobsQueue"], bodies...)
	rec := &recorder{answer: func(int, events.SQSEvent) (events.SQSEventResponse, error) { return failures(), nil }}
	run(t, tpl, map[string]Handlers{"WorkerFunction": {SQS: rec.handle}},
		Options{SQS: testenv.SQS(t), QueueURL: resolver(urls), Pollers: 1, PollWait: time.Second})
	// Well before the 60 s window: the batch is full.
	eventually(t, "the twelve messages are handled", func() bool { return remaining(t, urls["JobsQueue"]) == 0 })
	for _, d := range rec.all() {
		if d.batch != 1 {
			t.Fatalf("the twelve messages came in several batches: %s", rec.counts())
		}
	}
	if n := len(rec.all()); n != 12 {
		t.Errorf("%d deliveries; want 12", n)
	}
}

func TestTheRepositoryTemplatePlays(t *testing.T) {
	// Every trigger template.yaml has (the worker and the sweeper, once
	// they are in) is one the runner can play: read, checked and started.
	tpl, err := sam.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	handlers := map[string]Handlers{}
	for _, f := range tpl.Functions() {
		var h Handlers
		for _, ev := range f.Events {
			switch ev.Type {
			case sam.EventHTTPAPI:
				h.HTTP = httpOK
			case sam.EventSQS:
				h.SQS = sqsOK
			case sam.EventSchedule:
				h.Schedule = scheduleOK
			case sam.EventDynamoDB:
				h.Stream = streamOK
			}
		}
		handlers[f.LogicalID] = h
	}
	// The template's table is the project's: one of its own, here.
	_, arn := streamTable(t)
	o, _, _ := streamOptions(t, tpl, arn)
	o.PollWait, o.ScheduleEvery, o.Log = time.Second, time.Hour, nil
	r := run(t, tpl, handlers, o)
	t.Logf("triggers of template.yaml: %q", r.Triggers())
}
