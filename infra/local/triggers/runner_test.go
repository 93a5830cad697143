package triggers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/testenv"
)

// stackTemplate has the three kinds of function template.yaml will have:
// an API function, a worker on the jobs queue and a sweeper.
const stackTemplate = `
Globals:
  Function:
    Timeout: 2
Resources:
  JobsQueue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 12
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt JobsDLQ.Arn
        maxReceiveCount: 3
  JobsDLQ:
    Type: AWS::SQS::Queue
  ApiFunction:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Get:
          Type: HttpApi
          Properties: {Method: GET, Path: /x}
  WorkerFunction:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Jobs:
          Type: SQS
          Properties:
            Queue: !GetAtt JobsQueue.Arn
            BatchSize: 1
            FunctionResponseTypes: [ReportBatchItemFailures]
  SweeperFunction:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        EveryMinute:
          Type: Schedule
          Properties:
            Schedule: rate(1 minute)
`

func httpOK(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
}

func sqsOK(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return events.SQSEventResponse{}, nil
}

func scheduleOK(context.Context, events.EventBridgeEvent) error { return nil }

func streamOK(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return events.DynamoDBEventResponse{}, nil
}

func TestStartPlaysEveryTriggerOfTheTemplate(t *testing.T) {
	// The sweeper enqueues at start; the worker picks the message up: the
	// loop `make run` relies on after a restart.
	tpl := parse(t, stackTemplate)
	urls := createQueues(t, tpl)
	client := testenv.SQS(t)
	var mu sync.Mutex
	var worked []string
	sweeper := func(ctx context.Context, e events.EventBridgeEvent) error {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls["JobsQueue"]), MessageBody: aws.String("sweep " + e.ID)})
		return err
	}
	worker := func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range e.Records {
			worked = append(worked, r.Body)
		}
		return events.SQSEventResponse{}, nil
	}
	handlers := map[string]Handlers{
		"ApiFunction":     {HTTP: httpOK},
		"WorkerFunction":  {SQS: worker},
		"SweeperFunction": {Schedule: sweeper},
	}
	log, logs := newLog()
	r := run(t, tpl, handlers, Options{SQS: client, QueueURL: resolver(urls), PollWait: time.Second, ScheduleEvery: time.Hour, Log: log})
	want := []string{
		"SweeperFunction <- rate(1 minute), locally every 1h0m0s and once at start",
		"WorkerFunction <- SQS JobsQueue (batch 1, 2 pollers, timeout 2s)",
	}
	if got := r.Triggers(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Triggers():\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	eventually(t, "the worker handles what the sweeper enqueued at start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(worked) == 1 && strings.HasPrefix(worked[0], "sweep ") && remaining(t, urls["JobsQueue"]) == 0
	})
	if s := logs.String(); s != "" {
		t.Errorf("logged: %s", s)
	}
	if got := HTTP(tpl, handlers); len(got) != 1 || got["ApiFunction"] == nil {
		t.Errorf("HTTP(handlers) = %v", got)
	}
}

// An HTTP invocation carries the function's deadline, as Lambda's context
// does, and is abandoned when it passes: the caller gets ErrAbandoned while
// the handler is still stuck.
func TestHTTPInvocationsEndAtTheFunctionTimeout(t *testing.T) {
	tpl := parse(t, stackTemplate) // Timeout: 2
	release := make(chan struct{})
	returned := make(chan struct{})
	var deadline time.Time
	var hasDeadline bool
	stuck := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		defer close(returned)
		deadline, hasDeadline = ctx.Deadline()
		<-release
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	}
	h := HTTP(tpl, map[string]Handlers{"ApiFunction": {HTTP: stuck}})["ApiFunction"]
	before := time.Now()
	_, err := h(context.Background(), events.APIGatewayV2HTTPRequest{})
	after := time.Now()
	select {
	case <-returned:
		t.Fatal("the invocation waited for the handler")
	default:
	}
	close(release)
	<-returned
	if !errors.Is(err, ErrAbandoned) {
		t.Errorf("a handler stuck past the timeout: %v; want ErrAbandoned", err)
	}
	if !hasDeadline || deadline.Before(before.Add(2*time.Second)) || deadline.After(after) {
		t.Errorf("the handler's deadline %v (set %v); want the invocation's start plus 2s, in [%v, %v]",
			deadline, hasDeadline, before.Add(2*time.Second), after)
	}
}

func TestStartRefuses(t *testing.T) {
	all := func() map[string]Handlers {
		return map[string]Handlers{
			"ApiFunction":     {HTTP: httpOK},
			"WorkerFunction":  {SQS: sqsOK},
			"SweeperFunction": {Schedule: scheduleOK},
		}
	}
	replace := func(id string, h Handlers) map[string]Handlers {
		m := all()
		m[id] = h
		return m
	}
	urls := map[string]string{"JobsQueue": "http://127.0.0.1:1/000000000000/never-used"}
	cases := []struct {
		name     string
		template string
		handlers map[string]Handlers
		o        *Options
		want     string
	}{{
		name:     "an SQS event without a handler",
		handlers: replace("WorkerFunction", Handlers{}),
		want:     "WorkerFunction has an SQS event (Jobs) but no SQS handler",
	}, {
		name:     "a Schedule event without a handler",
		handlers: replace("SweeperFunction", Handlers{}),
		want:     "SweeperFunction has a Schedule event (EveryMinute) but no Schedule handler",
	}, {
		name:     "an HttpApi event without a handler",
		handlers: replace("ApiFunction", Handlers{SQS: sqsOK}),
		want:     "ApiFunction has an HttpApi event (Get) but no HTTP handler",
	}, {
		name:     "a handler for no function",
		handlers: replace("OldFunction", Handlers{SQS: sqsOK}),
		want:     "handlers are given for OldFunction, which is not a function of the template",
	}, {
		name:     "a handler for an event the function lacks",
		handlers: replace("SweeperFunction", Handlers{Schedule: scheduleOK, SQS: sqsOK}),
		want:     "SweeperFunction has a handler for SQS events but no SQS event in the template",
	}, {
		name:     "an event type the runner does not play",
		template: strings.Replace(stackTemplate, "Type: Schedule", "Type: Kinesis", 1),
		want:     "SweeperFunction event EveryMinute has type Kinesis, which the local runner does not play (it plays HttpApi, SQS, Schedule and DynamoDB)",
	}, {
		name:     "a cron schedule",
		template: strings.Replace(stackTemplate, "rate(1 minute)", "cron(0 * * * ? *)", 1),
		want:     "SweeperFunction event EveryMinute (Schedule): schedule \"cron(0 * * * ? *)\": cron expressions are not played by the local runner",
	}, {
		name:     "a visibility timeout under the function timeout",
		template: strings.Replace(stackTemplate, "VisibilityTimeout: 12", "VisibilityTimeout: 1", 1),
		want:     "WorkerFunction event Jobs (SQS): queue visibility timeout: 1 seconds is less than function timeout: 2 seconds",
	}, {
		name:     "a queue that is not in the template",
		template: strings.Replace(stackTemplate, "Queue: !GetAtt JobsQueue.Arn", "Queue: !GetAtt OtherQueue.Arn", 1),
		want:     "WorkerFunction event Jobs (SQS): template has no AWS::SQS::Queue OtherQueue",
	}, {
		name: "a queue the resolver does not know",
		o:    &Options{SQS: testenv.SQS(t), QueueURL: resolver(nil)},
		want: "WorkerFunction event Jobs (SQS): queue JobsQueue: no local queue JobsQueue",
	}, {
		name: "a poll wait SQS refuses",
		o:    &Options{SQS: testenv.SQS(t), QueueURL: resolver(urls), PollWait: 500 * time.Millisecond},
		want: "triggers: the poll wait must be whole seconds in 1..20, not 500ms",
	}, {
		name: "no queue resolver",
		o:    &Options{SQS: testenv.SQS(t)},
		want: "Options.SQS and Options.QueueURL are needed",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := c.template
			if text == "" {
				text = stackTemplate
			}
			handlers := c.handlers
			if handlers == nil {
				handlers = all()
			}
			o := Options{SQS: testenv.SQS(t), QueueURL: resolver(urls)}
			if c.o != nil {
				o = *c.o
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := Start(ctx, parse(t, text), handlers, o)
			if err == nil {
				cancel()
				r.Wait()
				t.Fatalf("Start succeeded; want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q; want %q", err, c.want)
			}
		})
	}
}

func TestStartReadsTheQueueBeforeStarting(t *testing.T) {
	// A resolver that answers with a queue fauxqs does not have: the error
	// comes from Start, not later from a poller's log.
	urls := map[string]string{"JobsQueue": testenv.SQSEndpoint() + "/000000000000/" + testenv.UniqueName(t, "missing")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Start(ctx, parse(t, stackTemplate), map[string]Handlers{
		"ApiFunction": {HTTP: httpOK}, "WorkerFunction": {SQS: sqsOK}, "SweeperFunction": {Schedule: scheduleOK},
	}, Options{SQS: testenv.SQS(t), QueueURL: resolver(urls)})
	if err == nil || !strings.Contains(err.Error(), "WorkerFunction event Jobs (SQS): read the ARN of queue") {
		t.Fatalf("error %v", err)
	}
}

func TestDisabledTriggersDoNotRun(t *testing.T) {
	text := strings.Replace(stackTemplate, "BatchSize: 1", "BatchSize: 1\n            Enabled: false", 1)
	text = strings.Replace(text, "Schedule: rate(1 minute)", "Schedule: rate(1 minute)\n            Enabled: false", 1)
	called := make(chan string, 2)
	r := run(t, parse(t, text), map[string]Handlers{
		"ApiFunction": {HTTP: httpOK},
		"WorkerFunction": {SQS: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			called <- "worker"
			return events.SQSEventResponse{}, nil
		}},
		"SweeperFunction": {Schedule: func(context.Context, events.EventBridgeEvent) error {
			called <- "sweeper"
			return errors.New("disabled")
		}},
	}, Options{ScheduleEvery: time.Millisecond}) // no SQS client or resolver needed
	want := "SweeperFunction <- rate(1 minute): disabled\nWorkerFunction <- SQS JobsQueue: disabled (Enabled: false)"
	if got := strings.Join(r.Triggers(), "\n"); got != want {
		t.Errorf("Triggers():\n%s\nwant:\n%s", got, want)
	}
	select {
	case who := <-called:
		t.Errorf("the disabled %s was invoked", who)
	case <-time.After(100 * time.Millisecond):
	}
}
