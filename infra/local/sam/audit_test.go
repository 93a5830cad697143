package sam

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"genjobs/internal/queue"
)

// loopsWithoutAllow are the loops Lambda would stop after ~16 hops.
func loopsWithoutAllow(t *Template) []Loop {
	var out []Loop
	for _, l := range t.Loops() {
		if l.RecursiveLoop != "Allow" {
			out = append(out, l)
		}
	}
	return out
}

// Every function that sends to the queue that invokes it (the deliverer's
// chain of 15-minute hops, the worker's promotions, and any added later)
// must let Lambda's loop detection leave it alone.
func TestEveryQueueLoopIsAllowed(t *testing.T) {
	tpl := loadRepoTemplate(t)
	loops := tpl.Loops()
	found := map[string]bool{}
	for _, l := range loops {
		found[l.Function+" <-> "+l.Queue] = true
	}
	// The loops known today; more may come, none may vanish unnoticed.
	for _, want := range []string{"DelivererFunction <-> DeliveriesQueue", "WorkerFunction <-> JobsQueue"} {
		if !found[want] {
			t.Errorf("loop %s not found; found %v", want, loops)
		}
	}
	for _, l := range loopsWithoutAllow(tpl) {
		t.Errorf("%s sends to %s, which invokes it, without RecursiveLoop: Allow: Lambda stops the chain after about 16 hops", l.Function, l.Queue)
	}
}

// The check above can fail: with RecursiveLoop taken from any looping
// function of template.yaml, the loop is reported.
func TestALoopWithoutAllowIsReported(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	loops := loadRepoTemplate(t).Loops()
	if len(loops) == 0 {
		t.Fatal("template.yaml has no loop to take RecursiveLoop from")
	}
	for _, l := range loops {
		tpl, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		delete(tpl.Resources[l.Function].Properties, "RecursiveLoop")
		var reported []string
		for _, m := range loopsWithoutAllow(tpl) {
			reported = append(reported, m.Function)
		}
		if fmt.Sprint(reported) != fmt.Sprint([]string{l.Function}) {
			t.Errorf("without %s's RecursiveLoop, reported %v; want [%s]", l.Function, reported, l.Function)
		}
	}
}

func TestLoopsAreFoundWhateverTheGrantsShape(t *testing.T) {
	tpl, err := Parse([]byte(`
Resources:
  A: { Type: AWS::SQS::Queue }
  B: { Type: AWS::SQS::Queue }
  C: { Type: AWS::SQS::Queue }
  Inline:
    Type: AWS::Serverless::Function
    Properties:
      Policies:
        - Statement:
            - { Effect: Allow, Action: [sqs:SendMessage], Resource: !Sub "${A.Arn}" }
      Events: { Q: { Type: SQS, Properties: { Queue: !GetAtt A.Arn } } }
  Template:
    Type: AWS::Serverless::Function
    Properties:
      RecursiveLoop: Allow
      Policies:
        - SQSSendMessagePolicy: { QueueName: !GetAtt B.QueueName }
      Events: { Q: { Type: SQS, Properties: { Queue: !GetAtt B.Arn } } }
  Attached:
    Type: AWS::Serverless::Function
    Properties:
      Events: { Q: { Type: SQS, Properties: { Queue: !GetAtt C.Arn } } }
  AttachedPolicy:
    Type: AWS::IAM::Policy
    Properties:
      Roles: [!Ref AttachedRole]
      PolicyDocument:
        Statement: { Effect: Allow, Action: "sqs:*", Resource: "*" }
  ReadsOnly:
    Type: AWS::Serverless::Function
    Properties:
      Policies:
        - Statement:
            - { Effect: Allow, Action: sqs:SendMessage, Resource: !GetAtt B.Arn }
            - { Effect: Deny, Action: sqs:SendMessage, Resource: !GetAtt A.Arn }
      Events: { Q: { Type: SQS, Properties: { Queue: !GetAtt A.Arn } } }
  Stream:
    Type: AWS::Serverless::Function
    Properties:
      Policies: [{ Statement: [{ Effect: Allow, Action: sqs:SendMessage, Resource: !GetAtt A.Arn }] }]
      Events: { S: { Type: DynamoDB, Properties: { Stream: x } } }
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range tpl.Loops() {
		got = append(got, l.Function+"/"+l.Queue+"/"+l.RecursiveLoop)
	}
	want := "Attached/C/ Inline/A/ Template/B/Allow"
	if strings.Join(got, " ") != want {
		t.Errorf("loops %v; want %s", got, want)
	}
}

// Lambda's advice for SQS sources, for every queue a function reads: a
// visibility timeout of at least six function timeouts, and the mapping's
// concurrency bounded (throttled invocations count as receives, and enough
// of them park a message on the dead-letter queue).
func TestEverySQSSourceIsSizedForItsFunction(t *testing.T) {
	tpl := loadRepoTemplate(t)
	sources := 0
	for _, f := range tpl.Functions() {
		for name, ev := range f.Events {
			if ev.Type != EventSQS {
				continue
			}
			sources++
			e, err := f.SQSEvent(name)
			if err != nil {
				t.Fatal(err)
			}
			q, err := tpl.Queue(e.Queue)
			if err != nil {
				t.Fatal(err)
			}
			if q.VisibilityTimeout < 6*f.Timeout {
				t.Errorf("%s: visibility timeout %d s is under six times %s's %d s", e.Queue, q.VisibilityTimeout, f.LogicalID, f.Timeout)
			}
			sc, _ := ev.Properties["ScalingConfig"].(map[string]any)
			if sc["MaximumConcurrency"] == nil {
				t.Errorf("%s event %s: no ScalingConfig.MaximumConcurrency", f.LogicalID, name)
			}
		}
	}
	if sources == 0 {
		t.Error("no SQS event source found")
	}
}

func TestDeliveriesQueueMatchesTheLocalOne(t *testing.T) {
	q, err := loadRepoTemplate(t).Queue("DeliveriesQueue")
	if err != nil {
		t.Fatal(err)
	}
	if q.VisibilityTimeout != queue.DeliveriesVisibilityTimeoutSeconds || q.RedrivePolicy == nil ||
		q.RedrivePolicy.MaxReceiveCount != queue.DeliveriesMaxReceiveCount {
		t.Errorf("deliveries queue %+v %+v; queue.CreateDeliveries uses %d s and %d receives", q, q.RedrivePolicy,
			queue.DeliveriesVisibilityTimeoutSeconds, queue.DeliveriesMaxReceiveCount)
	}
}

func TestEveryBucketRefusesPlainHTTPAndExpiresItsFiles(t *testing.T) {
	tpl := loadRepoTemplate(t)
	for _, id := range sortedKeys(tpl.Resources) {
		if tpl.Resources[id].Type != "AWS::S3::Bucket" {
			continue
		}
		tls := false
		for _, r := range tpl.Resources {
			if r.Type != "AWS::S3::BucketPolicy" || fmt.Sprint(references(r.Properties["Bucket"])) != "["+id+"]" {
				continue
			}
			doc, _ := r.Properties["PolicyDocument"].(map[string]any)
			stmts, _ := doc["Statement"].([]any)
			for _, st := range stmts {
				m, _ := st.(map[string]any)
				cond := fmt.Sprint(m["Condition"])
				if m["Effect"] == "Deny" && m["Principal"] == "*" && strings.Contains(cond, "aws:SecureTransport:false") {
					tls = true
				}
			}
		}
		if !tls {
			t.Errorf("bucket %s has no policy denying requests without TLS", id)
		}
		lc, _ := tpl.Resources[id].Properties["LifecycleConfiguration"].(map[string]any)
		rules, _ := lc["Rules"].([]any)
		expires := false
		for _, r := range rules {
			if m, _ := r.(map[string]any); m["ExpirationInDays"] != nil && m["Status"] == "Enabled" {
				expires = true
			}
		}
		if !expires {
			t.Errorf("bucket %s keeps its files forever: no enabled expiration rule", id)
		}
	}
}

func TestTheAPIIsThrottledAndLogsEachRequestWithItsID(t *testing.T) {
	tpl := loadRepoTemplate(t)
	apis := 0
	for id, r := range tpl.Resources {
		if r.Type != "AWS::Serverless::HttpApi" {
			continue
		}
		apis++
		rs, _ := r.Properties["DefaultRouteSettings"].(map[string]any)
		if rs["ThrottlingRateLimit"] == nil || rs["ThrottlingBurstLimit"] == nil {
			t.Errorf("%s: DefaultRouteSettings %v lacks throttling limits", id, rs)
		}
		al, _ := r.Properties["AccessLogSettings"].(map[string]any)
		format, _ := al["Format"].(string)
		if !strings.Contains(format, `"requestId":"$context.requestId"`) || al["DestinationArn"] == nil {
			t.Errorf("%s: access log settings %v; want JSON lines carrying $context.requestId", id, al)
			continue
		}
		// Each line must be JSON once API Gateway has filled it in.
		filled := strings.ReplaceAll(format, "$context.", "x")
		var v map[string]any
		if err := json.Unmarshal([]byte(filled), &v); err != nil {
			t.Errorf("%s: access log format is not a JSON object: %v", id, err)
		}
	}
	if apis == 0 {
		t.Error("no HTTP API found")
	}
}

// An on-call engineer learns of trouble from an alarm before a user does:
// each dead-letter queue holding anything, each event-driven function
// failing or throttled, jobs waiting, the stream falling behind. Read
// generically, so queues and functions added later need their alarms too.
func TestEverythingThatFailsOutOfSightHasAnAlarm(t *testing.T) {
	tpl := loadRepoTemplate(t)
	dlqs := tpl.DeadLetterQueues()
	if len(dlqs) < 3 {
		t.Errorf("dead-letter queues %v; want at least JobsDLQ, DeliveriesDLQ, NotifierDLQ", dlqs)
	}
	for _, q := range dlqs {
		if !tpl.HasAlarm("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", q) {
			t.Errorf("dead-letter queue %s has no alarm on ApproximateNumberOfMessagesVisible", q)
		}
	}
	fns := tpl.EventDriven()
	if len(fns) < 4 {
		t.Errorf("event-driven functions %v; want at least the worker, deliverer, notifier, sweeper", fns)
	}
	for _, f := range fns {
		for _, m := range []string{"Errors", "Throttles"} {
			if !tpl.HasAlarm("AWS/Lambda", m, "FunctionName", f) {
				t.Errorf("%s has no alarm on %s", f, m)
			}
		}
	}
	for _, f := range tpl.Functions() {
		for _, ev := range f.Events {
			switch ev.Type {
			case EventSQS:
				q, _, _ := getAtt(ev.Properties["Queue"])
				if !tpl.HasAlarm("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", q) && strings.HasPrefix(q, "Jobs") {
					t.Errorf("jobs queue %s has no alarm on the age of its oldest message", q)
				}
			case "DynamoDB":
				if !tpl.HasAlarm("AWS/Lambda", "IteratorAge", "FunctionName", f.LogicalID) {
					t.Errorf("%s reads a stream with no alarm on its iterator age", f.LogicalID)
				}
			}
		}
	}
	for _, a := range tpl.Alarms() {
		actions := fmt.Sprint(tpl.Resources[a.LogicalID].Properties["AlarmActions"])
		if !strings.Contains(actions, "HasAlarmTopic") || !strings.Contains(actions, "AlarmTopicArn") {
			t.Errorf("alarm %s does not notify AlarmTopicArn when it is given: %s", a.LogicalID, actions)
		}
	}
}

func TestDashboardIsJSON(t *testing.T) {
	tpl := loadRepoTemplate(t)
	d, ok := tpl.Resources["Dashboard"]
	if !ok || d.Type != "AWS::CloudWatch::Dashboard" {
		t.Fatal("no Dashboard")
	}
	body, _ := d.Properties["DashboardBody"].(map[string]any)["Fn::Sub"].(string)
	filled := regexp.MustCompile(`\$\{[^}]+\}`).ReplaceAllString(body, "x")
	var doc struct {
		Widgets []map[string]any `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(filled), &doc); err != nil || len(doc.Widgets) == 0 {
		t.Errorf("dashboard body: %v, %d widgets", err, len(doc.Widgets))
	}
}

// The console's forms that check a password or a code have routes of
// their own with a rate limit at API Gateway, below the API's default: a
// flood of guesses is refused before the function runs (the console's own
// throttle counts failures per address and per source).
func TestTheConsolesPasswordFormsHaveARouteThrottle(t *testing.T) {
	tpl := loadRepoTemplate(t)
	limited := map[string]bool{}
	for _, f := range tpl.Functions() {
		for _, ev := range f.Events {
			if ev.Type != "HttpApi" {
				continue
			}
			rs, _ := ev.Properties["RouteSettings"].(map[string]any)
			rate, _ := rs["ThrottlingRateLimit"].(int)
			burst, _ := rs["ThrottlingBurstLimit"].(int)
			if rate > 0 && rate <= 20 && burst > 0 && burst <= 40 {
				limited[fmt.Sprint(ev.Properties["Method"], " ", ev.Properties["Path"])] = true
			}
		}
	}
	for _, route := range []string{"POST /app/sign-in", "POST /app/sign-in/mfa", "POST /app/set-password", "POST /app/forgot-password", "POST /app/reset-password"} {
		if !limited[route] {
			t.Errorf("%s has no route throttle of its own (RouteSettings with a rate of at most 20 a second)", route)
		}
	}
}
