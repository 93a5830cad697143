package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/sam"
	"genjobs/internal/store/schema"
	"genjobs/internal/testenv"
)

// notifierTemplate is the notifier's stream mapping (sam/testdata/
// notifier.yaml) with a one-second timeout and the given properties.
func notifierTemplate(props ...string) string {
	return `
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      StreamSpecification: {StreamViewType: NEW_AND_OLD_IMAGES}
  NotifierDLQ:
    Type: AWS::SQS::Queue
  NotifierFunction:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 1
      Events:
        TerminalJobs:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt Table.StreamArn
            StartingPosition: TRIM_HORIZON
            DestinationConfig:
              OnFailure:
                Destination: !GetAtt NotifierDLQ.Arn
            ` + strings.Join(props, "\n            ") + `
`
}

// streamTable is a table of the project's definition (its stream has new
// and old images) under a fresh name: its name and its stream's ARN.
func streamTable(t testing.TB) (string, string) {
	t.Helper()
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	name := testenv.UniqueName(t, "stream")
	if err := schema.CreateTable(ctx, db, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	arn, err := latestStreamARN(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	return name, arn
}

func latestStreamARN(ctx context.Context, db *dynamodb.Client, table string) (string, error) {
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", err
	}
	if out.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("table %s has no stream", table)
	}
	return *out.Table.LatestStreamArn, nil
}

// streamOptions are the runner's options for tpl on a table of its own:
// the stream of that table, the template's queues on fauxqs, retries a
// millisecond apart.
func streamOptions(t testing.TB, tpl *sam.Template, streamARN string) (Options, map[string]string, *logBuffer) {
	urls := createQueues(t, tpl)
	log, logs := newLog()
	return Options{
		SQS: testenv.SQS(t), QueueURL: resolver(urls),
		Streams: testenv.DynamoDBStreams(t),
		StreamARN: func(_ context.Context, id string) (string, error) {
			if id != "Table" {
				return "", fmt.Errorf("no local table %s", id)
			}
			return streamARN, nil
		},
		StreamIdleWait: 5 * time.Millisecond, StreamRetryDelay: time.Millisecond, Log: log,
	}, urls, logs
}

// job writes a job item: its status, and a webhook URL when webhook is set.
func job(t testing.TB, table, id, status string, webhook bool) {
	t.Helper()
	item := map[string]dtypes.AttributeValue{
		"PK":     &dtypes.AttributeValueMemberS{Value: "JOB#" + id},
		"SK":     &dtypes.AttributeValueMemberS{Value: "JOB"},
		"job_id": &dtypes.AttributeValueMemberS{Value: id},
		"status": &dtypes.AttributeValueMemberS{Value: status},
	}
	if webhook {
		item["webhook_url"] = &dtypes.AttributeValueMemberS{Value: "https://example.com/hooks/" + id}
	}
	if _, err := testenv.DynamoDB(t).PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// setStatus moves a job to status, as the lifecycle's UpdateItem does.
func setStatus(t testing.TB, table, id, status string) {
	t.Helper()
	_, err := testenv.DynamoDB(t).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]dtypes.AttributeValue{
			"PK": &dtypes.AttributeValueMemberS{Value: "JOB#" + id}, "SK": &dtypes.AttributeValueMemberS{Value: "JOB"},
		},
		UpdateExpression:          aws.String("SET #s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{":s": &dtypes.AttributeValueMemberS{Value: status}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// invocation is one call of a stream handler, as it saw it.
type streamCall struct {
	records   []events.DynamoDBEventRecord
	deadline  time.Duration
	requestID string
}

// ids are the job ids of the call's records.
func (c streamCall) ids() string {
	var out []string
	for _, r := range c.records {
		out = append(out, strings.TrimPrefix(r.Change.Keys["PK"].String(), "JOB#"))
	}
	return strings.Join(out, ",")
}

// streamRecorder is a stream handler that hands each call to the test and
// answers with answer(call number, event).
type streamRecorder struct {
	calls  chan streamCall
	answer func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
	n      atomic.Int32
}

func newStreamRecorder(answer func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)) *streamRecorder {
	if answer == nil {
		answer = func(int, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, nil
		}
	}
	return &streamRecorder{calls: make(chan streamCall, 100), answer: answer}
}

func (r *streamRecorder) handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	n := int(r.n.Add(1))
	c := streamCall{records: ev.Records}
	if dl, ok := ctx.Deadline(); ok {
		c.deadline = time.Until(dl)
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		c.requestID = lc.AwsRequestID
	}
	r.calls <- c
	return r.answer(n, ev)
}

// next waits for the handler's next call.
func (r *streamRecorder) next(t *testing.T) streamCall {
	t.Helper()
	select {
	case c := <-r.calls:
		return c
	case <-time.After(patience):
		t.Fatal("gave up waiting for the stream handler's next call")
	}
	return streamCall{}
}

// sequence waits for the next n calls and returns their job ids: "a,b c".
func (r *streamRecorder) sequence(t *testing.T, n int) string {
	t.Helper()
	var out []string
	for range n {
		out = append(out, r.next(t).ids())
	}
	return strings.Join(out, " ")
}

// quiet fails the test if a call is waiting. Records of a shard are
// delivered in order: once a later record has been, a call that should
// not happen has happened already.
func (r *streamRecorder) quiet(t *testing.T) {
	t.Helper()
	select {
	case c := <-r.calls:
		t.Errorf("an unexpected call with %s", c.ids())
	default:
	}
}

func failedItems(seqs ...string) events.DynamoDBEventResponse {
	var r events.DynamoDBEventResponse
	for _, s := range seqs {
		r.BatchItemFailures = append(r.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: s})
	}
	return r
}

// failureRecords waits until the queue holds n messages and returns them
// as Lambda's on-failure records.
func failureRecords(t *testing.T, url string, n int) []OnFailureRecord {
	t.Helper()
	var out []OnFailureRecord
	eventually(t, fmt.Sprintf("%d records are on the on-failure destination", n), func() bool {
		got, err := testenv.SQS(t).ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got.Messages {
			var r OnFailureRecord
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &r); err != nil {
				t.Fatalf("on-failure message %s: %v", aws.ToString(m.Body), err)
			}
			out = append(out, r)
		}
		return len(out) >= n
	})
	if len(out) != n {
		t.Fatalf("%d on-failure records; want %d: %+v", len(out), n, out)
	}
	return out
}

func TestStreamDeliversTheRecordsTheFilterLetThrough(t *testing.T) {
	tpl := parse(t, notifierTemplate(
		"BatchSize: 10",
		"FilterCriteria: {Filters: [{Pattern: '"+terminalJobs+"'}]}",
	))
	table, arn := streamTable(t)
	o, _, logs := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(nil)
	r := run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	if got, want := strings.Join(r.Triggers(), "\n"), "NotifierFunction <- DynamoDB Table stream (TRIM_HORIZON, batch 10, 1 filter, on failure NotifierDLQ, timeout 1s)"; got != want {
		t.Errorf("Triggers(): %s; want %s", got, want)
	}

	job(t, table, "a", "queued", true)     // INSERT: dropped
	setStatus(t, table, "a", "processing") // not terminal: dropped
	job(t, table, "b", "processing", false)
	setStatus(t, table, "b", "completed") // no webhook_url: dropped
	setStatus(t, table, "a", "completed") // delivered
	setStatus(t, table, "a", "failed")    // terminal -> terminal: dropped
	job(t, table, "c", "processing", true)
	setStatus(t, table, "c", "cancelled") // delivered

	var got []events.DynamoDBEventRecord
	var call streamCall
	for len(got) < 2 {
		call = rec.next(t)
		got = append(got, call.records...)
	}
	rec.quiet(t)
	if len(got) != 2 {
		t.Fatalf("%d records delivered; want 2: %+v", len(got), got)
	}
	a, c := got[0], got[1]
	if a.Change.Keys["PK"].String() != "JOB#a" || c.Change.Keys["PK"].String() != "JOB#c" {
		t.Fatalf("delivered %s then %s; want jobs a then c", a.Change.Keys["PK"].String(), c.Change.Keys["PK"].String())
	}
	if a.EventName != "MODIFY" || a.EventSource != "aws:dynamodb" || a.EventVersion == "" || a.EventID == "" || a.AWSRegion == "" || a.EventSourceArn != arn {
		t.Errorf("record %+v; stream %s", a, arn)
	}
	ch := a.Change
	if ch.NewImage["status"].String() != "completed" || ch.OldImage["status"].String() != "processing" ||
		ch.NewImage["webhook_url"].String() != "https://example.com/hooks/a" || ch.NewImage["job_id"].String() != "a" ||
		ch.Keys["SK"].String() != "JOB" || len(ch.Keys) != 2 {
		t.Errorf("images: keys %v, new %v, old %v", ch.Keys, ch.NewImage, ch.OldImage)
	}
	if ch.SequenceNumber == "" || compareSequenceNumbers(c.Change.SequenceNumber, ch.SequenceNumber) <= 0 ||
		ch.SizeBytes <= 0 || ch.StreamViewType != "NEW_AND_OLD_IMAGES" || ch.ApproximateCreationDateTime.IsZero() {
		t.Errorf("stream record %+v", ch)
	}
	if call.deadline <= 0 || call.deadline > time.Second || len(call.requestID) != 36 {
		t.Errorf("the handler had %s left and request id %q; want at most the function's 1 s", call.deadline, call.requestID)
	}
	if s := logs.String(); s != "" {
		t.Errorf("logged: %s", s)
	}
}

func TestStreamRecordsCarryEveryAttributeKind(t *testing.T) {
	tpl := parse(t, notifierTemplate())
	table, arn := streamTable(t)
	o, _, _ := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(nil)
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	item := map[string]dtypes.AttributeValue{
		"PK":   &dtypes.AttributeValueMemberS{Value: "JOB#kinds"},
		"SK":   &dtypes.AttributeValueMemberS{Value: "JOB"},
		"n":    &dtypes.AttributeValueMemberN{Value: "12.50"},
		"b":    &dtypes.AttributeValueMemberB{Value: []byte{0, 1, 255}},
		"t":    &dtypes.AttributeValueMemberBOOL{Value: true},
		"null": &dtypes.AttributeValueMemberNULL{Value: true},
		"l":    &dtypes.AttributeValueMemberL{Value: []dtypes.AttributeValue{&dtypes.AttributeValueMemberS{Value: "x"}, &dtypes.AttributeValueMemberN{Value: "1"}}},
		"m":    &dtypes.AttributeValueMemberM{Value: map[string]dtypes.AttributeValue{"in": &dtypes.AttributeValueMemberBOOL{Value: false}, "empty": &dtypes.AttributeValueMemberM{Value: map[string]dtypes.AttributeValue{}}}},
		"ss":   &dtypes.AttributeValueMemberSS{Value: []string{"p", "q"}},
		"ns":   &dtypes.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":   &dtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
	}
	if _, err := testenv.DynamoDB(t).PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	call := rec.next(t)
	if len(call.records) != 1 || call.records[0].EventName != "INSERT" || call.records[0].Change.OldImage != nil {
		t.Fatalf("records %+v", call.records)
	}
	img := call.records[0].Change.NewImage
	sorted := func(s []string) string { s = slices.Clone(s); slices.Sort(s); return strings.Join(s, ",") }
	l, m := img["l"].List(), img["m"].Map()
	if img["n"].Number() != "12.5" /* DynamoDB keeps numbers normalised */ || string(img["b"].Binary()) != "\x00\x01\xff" || !img["t"].Boolean() || !img["null"].IsNull() ||
		len(l) != 2 || l[0].String() != "x" || l[1].Number() != "1" ||
		len(m) != 2 || m["in"].Boolean() || len(m["empty"].Map()) != 0 ||
		sorted(img["ss"].StringSet()) != "p,q" || sorted(img["ns"].NumberSet()) != "1,2.5" || len(img["bs"].BinarySet()) != 2 {
		t.Errorf("new image %v", img)
	}
	// The event is Lambda's: it encodes and decodes with aws-lambda-go's types.
	b, err := json.Marshal(events.DynamoDBEvent{Records: call.records})
	if err != nil {
		t.Fatal(err)
	}
	var back events.DynamoDBEvent
	if err := json.Unmarshal(b, &back); err != nil || back.Records[0].Change.NewImage["n"].Number() != "12.5" || !strings.Contains(string(b), `"eventSourceARN":"`+arn+`"`) {
		t.Errorf("the event does not round-trip: %v %s", err, b)
	}
}

func TestStreamRetriesFromTheFirstReportedFailure(t *testing.T) {
	tpl := parse(t, notifierTemplate("BatchSize: 10", "MaximumRetryAttempts: 5", "FunctionResponseTypes: [ReportBatchItemFailures]"))
	table, arn := streamTable(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		job(t, table, id, "queued", true) // written before the start: one batch
	}
	o, _, logs := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if n == 1 { // c and b fail: the retry starts at b, the lowest
			return failedItems(ev.Records[2].Change.SequenceNumber, ev.Records[1].Change.SequenceNumber), nil
		}
		return events.DynamoDBEventResponse{}, nil
	})
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	if got := rec.sequence(t, 2); got != "a,b,c,d b,c,d" {
		t.Errorf("calls %s; want a,b,c,d then b,c,d", got)
	}
	job(t, table, "e", "queued", true)
	if got := rec.sequence(t, 1); got != "e" {
		t.Errorf("then %s; want e", got)
	}
	rec.quiet(t)
	if lines := logs.lines("batch items failed"); len(lines) != 1 || lines[0]["function"] != "NotifierFunction" || lines[0]["retry"] != 1.0 {
		t.Errorf("want one line on the failed items; logs:\n%s", logs)
	}
}

func TestStreamBatchFailuresThatNameNoRecordFailTheWholeBatch(t *testing.T) {
	tpl := parse(t, notifierTemplate("MaximumRetryAttempts: 5", "FunctionResponseTypes: [ReportBatchItemFailures]"))
	table, arn := streamTable(t)
	job(t, table, "a", "queued", true)
	job(t, table, "b", "queued", true)
	o, _, logs := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		switch n {
		case 1: // an event id is not a sequence number
			return failedItems(ev.Records[1].EventID), nil
		case 2:
			return failedItems(""), nil
		}
		return events.DynamoDBEventResponse{}, nil
	})
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	if got := rec.sequence(t, 3); got != "a,b a,b a,b" {
		t.Errorf("calls %s; want the whole batch three times", got)
	}
	if n := len(logs.lines("invocation failed; the batch will be retried")); n != 2 {
		t.Errorf("%d failure lines; want 2:\n%s", n, logs)
	}
}

func TestStreamIgnoresReportedFailuresWithoutReportBatchItemFailures(t *testing.T) {
	tpl := parse(t, notifierTemplate("MaximumRetryAttempts: 5"))
	table, arn := streamTable(t)
	job(t, table, "a", "queued", true)
	o, _, logs := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return failedItems(ev.Records[0].Change.SequenceNumber), nil
	})
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	job(t, table, "b", "queued", true)
	if got := rec.next(t).ids(); got != "a" && got != "a,b" {
		t.Fatalf("first call %s", got)
	} else if got == "a" {
		if got := rec.next(t).ids(); got != "b" {
			t.Fatalf("then %s; want b: a was not to be retried", got)
		}
	}
	rec.quiet(t)
	if s := logs.String(); s != "" {
		t.Errorf("logged: %s", s)
	}
}

func TestStreamBisectsAFailingBatchAndParksThePoisonRecord(t *testing.T) {
	tpl := parse(t, notifierTemplate("BatchSize: 10", "BisectBatchOnFunctionError: true", "MaximumRetryAttempts: 1"))
	table, arn := streamTable(t)
	for _, id := range []string{"a", "b", "poison", "d"} {
		job(t, table, id, "queued", true)
	}
	o, urls, _ := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if r.Change.Keys["PK"].String() == "JOB#poison" {
				return events.DynamoDBEventResponse{}, errors.New("cannot handle poison")
			}
		}
		return events.DynamoDBEventResponse{}, nil
	})
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	// Halves until the poison record is alone; then its one retry; then on.
	calls := make([]streamCall, 6)
	for i := range calls {
		calls[i] = rec.next(t)
	}
	var seq []string
	for _, c := range calls {
		seq = append(seq, c.ids())
	}
	if got := strings.Join(seq, " "); got != "a,b,poison,d a,b poison,d poison poison d" {
		t.Fatalf("calls %s; want a,b,poison,d a,b poison,d poison poison d", got)
	}
	f := failureRecords(t, urls["NotifierDLQ"], 1)[0]
	poison := calls[3].records[0].Change
	want := DDBStreamBatchInfo{
		ShardID: f.DDBStreamBatchInfo.ShardID, StartSequenceNumber: poison.SequenceNumber, EndSequenceNumber: poison.SequenceNumber,
		ApproximateArrivalOfFirstRecord: poison.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
		ApproximateArrivalOfLastRecord:  poison.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
		BatchSize:                       1, StreamARN: arn,
	}
	if f.DDBStreamBatchInfo != want || !strings.HasPrefix(want.ShardID, "shardId-") {
		t.Errorf("batch info %+v; want %+v", f.DDBStreamBatchInfo, want)
	}
	// The poison record went through four invocations: the whole batch,
	// its half, and twice alone.
	rc := f.RequestContext
	if rc.Condition != ConditionRetryAttemptsExhausted || rc.ApproximateInvokeCount != 4 || rc.RequestID != calls[4].requestID ||
		rc.FunctionARN != "arn:aws:lambda:us-east-1:000000000000:function:NotifierFunction" {
		t.Errorf("request context %+v; last request %s", rc, calls[4].requestID)
	}
	if f.ResponseContext == nil || f.ResponseContext.FunctionError != "Unhandled" || f.ResponseContext.StatusCode != 200 || f.Version != "1.0" {
		t.Errorf("response context %+v, version %s", f.ResponseContext, f.Version)
	}
	if _, err := time.Parse(time.RFC3339, f.Timestamp); err != nil {
		t.Errorf("timestamp %q", f.Timestamp)
	}
	// The poller moved on.
	job(t, table, "e", "queued", true)
	if got := rec.sequence(t, 1); got != "e" {
		t.Errorf("then %s; want e", got)
	}
}

func TestStreamRetriesAWholeBatchThenMovesOn(t *testing.T) {
	tpl := parse(t, notifierTemplate("MaximumRetryAttempts: 2"))
	table, arn := streamTable(t)
	job(t, table, "a", "queued", true)
	job(t, table, "b", "queued", true)
	o, urls, logs := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if ev.Records[0].Change.Keys["PK"].String() == "JOB#a" {
			panic("the handler has a bug")
		}
		return events.DynamoDBEventResponse{}, nil
	})
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	if got := rec.sequence(t, 3); got != "a,b a,b a,b" {
		t.Errorf("calls %s; want the batch, then its two retries", got)
	}
	f := failureRecords(t, urls["NotifierDLQ"], 1)[0]
	if f.RequestContext.ApproximateInvokeCount != 3 || f.DDBStreamBatchInfo.BatchSize != 2 || f.RequestContext.Condition != ConditionRetryAttemptsExhausted {
		t.Errorf("on-failure record %+v", f)
	}
	job(t, table, "c", "queued", true)
	if got := rec.sequence(t, 1); got != "c" {
		t.Errorf("then %s; want c", got)
	}
	if lines := logs.lines("records discarded"); len(lines) != 1 || lines[0]["destination"] != "NotifierDLQ" {
		t.Errorf("want one discard line; logs:\n%s", logs)
	}
}

func TestStreamReportedFailuresUseUpTheRetriesToo(t *testing.T) {
	tpl := parse(t, notifierTemplate("BatchSize: 10", "MaximumRetryAttempts: 1", "FunctionResponseTypes: [ReportBatchItemFailures]"))
	table, arn := streamTable(t)
	for _, id := range []string{"a", "b", "c"} {
		job(t, table, id, "queued", true)
	}
	o, urls, _ := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if r.Change.Keys["PK"].String() == "JOB#b" {
				return failedItems(r.Change.SequenceNumber), nil
			}
		}
		return events.DynamoDBEventResponse{}, nil
	})
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	first := rec.next(t)
	if got := first.ids() + " " + rec.sequence(t, 1); got != "a,b,c b,c" {
		t.Errorf("calls %s; want a,b,c then b,c", got)
	}
	f := failureRecords(t, urls["NotifierDLQ"], 1)[0]
	b, c := first.records[1].Change, first.records[2].Change
	if f.DDBStreamBatchInfo.StartSequenceNumber != b.SequenceNumber || f.DDBStreamBatchInfo.EndSequenceNumber != c.SequenceNumber ||
		f.DDBStreamBatchInfo.BatchSize != 2 || f.RequestContext.ApproximateInvokeCount != 2 {
		t.Errorf("on-failure record %+v; want b..c, 2 records, 2 invocations", f)
	}
	if f.ResponseContext == nil || f.ResponseContext.FunctionError != "" {
		t.Errorf("the function reported items rather than failed: response context %+v", f.ResponseContext)
	}
}

func TestStreamInvocationPastTheTimeoutIsRetried(t *testing.T) {
	tpl := parse(t, notifierTemplate("MaximumRetryAttempts: 3"))
	table, arn := streamTable(t)
	job(t, table, "slow", "queued", true)
	o, _, logs := streamOptions(t, tpl, arn)
	returned := make(chan struct{})
	rec := newStreamRecorder(func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if n == 1 {
			time.Sleep(1200 * time.Millisecond) // past the 1 s timeout; its success must not count
			close(returned)
		}
		return events.DynamoDBEventResponse{}, nil
	})
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	if got := rec.sequence(t, 2); got != "slow slow" {
		t.Errorf("calls %s; want slow twice", got)
	}
	<-returned
	if n := len(logs.lines("invocation abandoned at the function's timeout; the batch will be retried")); n != 1 {
		t.Errorf("%d abandon lines; want 1:\n%s", n, logs)
	}
}

// fakeClock is a clock the test moves: time.Now plus an offset.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) Now() time.Time           { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) set(offset time.Duration) { c.offset.Store(int64(offset)) }

func TestStreamDiscardsRecordsOlderThanMaximumRecordAge(t *testing.T) {
	tpl := parse(t, notifierTemplate("MaximumRecordAgeInSeconds: 60"))
	table, arn := streamTable(t)
	o, urls, _ := streamOptions(t, tpl, arn)
	ev, err := tpl.Functions()[0].DynamoDBEvent("TerminalJobs")
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{}
	rec := newStreamRecorder(func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if ev.Records[0].Change.Keys["PK"].String() == "JOB#fails" {
			clock.set(3 * time.Minute) // the retry comes three minutes later
			return events.DynamoDBEventResponse{}, errors.New("try later")
		}
		return events.DynamoDBEventResponse{}, nil
	})
	p := &StreamPoller{
		Function: "NotifierFunction", Event: ev, StreamARN: arn, Timeout: time.Second, Handler: rec.handle,
		Client: o.Streams, SQS: o.SQS, DestinationURL: urls["NotifierDLQ"],
		IdleWait: 5 * time.Millisecond, RetryDelay: time.Millisecond, Now: clock.Now, Log: o.Log,
	}
	// A record over two minutes old when the poller reads it: discarded unseen.
	job(t, table, "stale", "queued", true)
	clock.set(3 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	f := failureRecords(t, urls["NotifierDLQ"], 1)[0]
	if f.RequestContext.Condition != ConditionRecordAgeExceeded || f.RequestContext.ApproximateInvokeCount != 0 || f.ResponseContext != nil || f.DDBStreamBatchInfo.BatchSize != 1 {
		t.Errorf("on-failure record %+v", f)
	}
	// A fresh record whose invocation fails, and whose retry comes past the
	// record's maximum age: discarded after one invocation.
	clock.set(0)
	job(t, table, "fails", "queued", true)
	if got := rec.sequence(t, 1); got != "fails" {
		t.Errorf("call %s; want fails", got)
	}
	f = failureRecords(t, urls["NotifierDLQ"], 1)[0]
	if f.RequestContext.Condition != ConditionRecordAgeExceeded || f.RequestContext.ApproximateInvokeCount != 1 || f.ResponseContext == nil || f.ResponseContext.FunctionError != "Unhandled" {
		t.Errorf("on-failure record %+v", f)
	}
	clock.set(0)
	job(t, table, "fresh", "queued", true)
	if got := rec.sequence(t, 1); got != "fresh" {
		t.Errorf("then %s; want fresh", got)
	}
	rec.quiet(t)
}

func TestStreamResumesFromItsCheckpointFile(t *testing.T) {
	tpl := parse(t, notifierTemplate())
	table, arn := streamTable(t)
	o, _, _ := streamOptions(t, tpl, arn)
	o.CheckpointDir = filepath.Join(t.TempDir(), "streams")
	rec := newStreamRecorder(nil)
	handlers := map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}

	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, tpl, handlers, o)
	if err != nil {
		t.Fatal(err)
	}
	job(t, table, "a", "queued", true)
	setStatus(t, table, "a", "processing")
	for n := 0; n < 2; {
		n += len(rec.next(t).records) // the creation and the change: one batch or two
	}
	cancel()
	r.Wait()

	// Written while the runner is down: the next run delivers only it.
	setStatus(t, table, "a", "completed")
	run(t, tpl, handlers, o)
	call := rec.next(t)
	if len(call.records) != 1 || call.records[0].Change.NewImage["status"].String() != "completed" {
		t.Fatalf("second run delivered %+v; want only the write made meanwhile", call.records)
	}
	job(t, table, "b", "queued", true)
	if got := rec.sequence(t, 1); got != "b" {
		t.Errorf("then %s; want b", got)
	}
	b, err := os.ReadFile(filepath.Join(o.CheckpointDir, "NotifierFunction.TerminalJobs.json"))
	if err != nil || !strings.Contains(string(b), arn) {
		t.Errorf("checkpoint file %s, %v", b, err)
	}
}

func TestStreamCheckpointOfAnotherStreamIsIgnored(t *testing.T) {
	tpl := parse(t, notifierTemplate())
	table, arn := streamTable(t)
	o, _, _ := streamOptions(t, tpl, arn)
	o.CheckpointDir = t.TempDir()
	// A checkpoint of a table made before, under the same name.
	old := `{"stream_arn": "` + arn + `-before", "shards": {"shardId-00000000000000000000-00000000": {"sequence_number": "000000000000000000099"}}}`
	if err := os.WriteFile(filepath.Join(o.CheckpointDir, "NotifierFunction.TerminalJobs.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	job(t, table, "a", "queued", true)
	rec := newStreamRecorder(nil)
	run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	if got := rec.sequence(t, 1); got != "a" {
		t.Errorf("delivered %s; want a, from TRIM_HORIZON", got)
	}
}

func TestStreamStartsAtLatest(t *testing.T) {
	tpl := parse(t, strings.Replace(notifierTemplate(), "TRIM_HORIZON", "LATEST", 1))
	table, arn := streamTable(t)
	job(t, table, "before", "queued", true)
	o, _, _ := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(nil)
	r := run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	if !strings.Contains(r.Triggers()[0], "(LATEST, batch 100,") {
		t.Errorf("Triggers() %q", r.Triggers())
	}
	// The poller may take its first iterator after this write: write until
	// one arrives, then check that "before" never did.
	var got string
	for i := 0; got == ""; i++ {
		job(t, table, fmt.Sprint("after", i), "queued", true)
		select {
		case c := <-rec.calls:
			got = c.ids()
		case <-time.After(200 * time.Millisecond):
			if i > 50 {
				t.Fatal("nothing was delivered")
			}
		}
	}
	if strings.Contains(got, "before") {
		t.Errorf("a record written before the start was delivered: %s", got)
	}
}

func TestStreamMappingChecks(t *testing.T) {
	notifier := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}
	_, arn := streamTable(t)
	base := notifierTemplate("FilterCriteria: {Filters: [{Pattern: '" + terminalJobs + "'}]}")
	cases := []struct {
		name     string
		template string
		handlers map[string]Handlers
		o        func(*Options)
		want     string
	}{{
		name:     "a DynamoDB event without a handler",
		handlers: map[string]Handlers{"NotifierFunction": {SQS: sqsOK}},
		want:     "NotifierFunction has a DynamoDB event (TerminalJobs) but no Stream handler",
	}, {
		name:     "a Stream handler for a function without a DynamoDB event",
		template: stackTemplate,
		handlers: map[string]Handlers{"ApiFunction": {HTTP: httpOK}, "WorkerFunction": {SQS: sqsOK}, "SweeperFunction": {Schedule: scheduleOK, Stream: notifier}},
		want:     "SweeperFunction has a handler for DynamoDB events but no DynamoDB event in the template",
	}, {
		name:     "bad properties",
		template: strings.Replace(base, "StartingPosition: TRIM_HORIZON", "StartingPosition: TRIM_HORIZON\n            MaximumRecordAgeInSeconds: 30", 1),
		want:     "NotifierFunction event TerminalJobs (DynamoDB): MaximumRecordAgeInSeconds must be -1 or 60..604800, not 30",
	}, {
		name:     "a table without a stream",
		template: strings.Replace(base, "StreamSpecification: {StreamViewType: NEW_AND_OLD_IMAGES}", "BillingMode: PAY_PER_REQUEST", 1),
		want:     "NotifierFunction event TerminalJobs (DynamoDB): table Table has no StreamSpecification, hence no StreamArn",
	}, {
		name:     "a table that is not in the template",
		template: strings.Replace(base, "!GetAtt Table.StreamArn", "!GetAtt Other.StreamArn", 1),
		want:     "NotifierFunction event TerminalJobs (DynamoDB): template has no AWS::DynamoDB::Table Other",
	}, {
		name:     "a destination that is not a queue of the template",
		template: strings.Replace(base, "!GetAtt NotifierDLQ.Arn", "!GetAtt Table.Arn", 1),
		want:     "NotifierFunction event TerminalJobs (DynamoDB): on-failure destination: template has no AWS::SQS::Queue Table",
	}, {
		name:     "a FIFO destination",
		template: strings.Replace(base, "  NotifierDLQ:\n    Type: AWS::SQS::Queue\n", "  NotifierDLQ:\n    Type: AWS::SQS::Queue\n    Properties: {FifoQueue: true}\n", 1),
		want:     "the on-failure destination NotifierDLQ must be a standard queue, not FIFO",
	}, {
		name:     "a filter operator Lambda does not have",
		template: notifierTemplate(`FilterCriteria: {Filters: [{Pattern: '{"eventName":[{"wildcard":"MOD*"}]}'}]}`),
		want:     "NotifierFunction event TerminalJobs (DynamoDB): FilterCriteria.Filters[0].Pattern: eventName: the wildcard operator is not played",
	}, {
		name: "no streams client",
		o:    func(o *Options) { o.Streams = nil },
		want: "triggers: Options.Streams and Options.StreamARN are needed to play DynamoDB events",
	}, {
		name: "a table the resolver does not know",
		o: func(o *Options) {
			o.StreamARN = func(context.Context, string) (string, error) { return "", errors.New("no local table Table") }
		},
		want: "NotifierFunction event TerminalJobs (DynamoDB): stream of table Table: no local table Table",
	}, {
		name: "a stream DynamoDB Local does not have",
		o: func(o *Options) {
			o.StreamARN = func(context.Context, string) (string, error) { return arn + "-gone", nil }
		},
		want: "NotifierFunction event TerminalJobs (DynamoDB): describe stream " + arn + "-gone",
	}, {
		name: "no queue resolver for the destination",
		o:    func(o *Options) { o.QueueURL = nil },
		want: "triggers: Options.SQS and Options.QueueURL are needed for the on-failure destination of NotifierFunction event TerminalJobs",
	}, {
		name: "a destination the resolver does not know",
		o:    func(o *Options) { o.QueueURL = resolver(nil) },
		want: "NotifierFunction event TerminalJobs (DynamoDB): on-failure destination NotifierDLQ: no local queue NotifierDLQ",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := c.template
			if text == "" {
				text = base
			}
			tpl := parse(t, text)
			o, _, _ := streamOptions(t, tpl, arn)
			if c.o != nil {
				c.o(&o)
			}
			handlers := c.handlers
			if handlers == nil {
				handlers = map[string]Handlers{"NotifierFunction": {Stream: notifier}}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := Start(ctx, tpl, handlers, o)
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
	// Disabled: checked, not started, and no client needed.
	tpl := parse(t, notifierTemplate("Enabled: false"))
	r := run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: notifier}}, Options{})
	if got := strings.Join(r.Triggers(), "\n"); got != "NotifierFunction <- DynamoDB Table stream: disabled (Enabled: false)" {
		t.Errorf("Triggers(): %s", got)
	}
}

func TestTheNotifierTemplatePlays(t *testing.T) {
	// The mapping exactly as the lead engineer adds it to template.yaml.
	tpl, err := sam.Load("../sam/testdata/notifier.yaml")
	if err != nil {
		t.Fatal(err)
	}
	table, arn := streamTable(t)
	o, _, _ := streamOptions(t, tpl, arn)
	rec := newStreamRecorder(nil)
	r := run(t, tpl, map[string]Handlers{"NotifierFunction": {Stream: rec.handle}}, o)
	want := "NotifierFunction <- DynamoDB Table stream (TRIM_HORIZON, batch 10, 1 filter, on failure NotifierDLQ, timeout 30s)"
	if got := strings.Join(r.Triggers(), "\n"); got != want {
		t.Errorf("Triggers(): %s; want %s", got, want)
	}
	job(t, table, "j", "processing", true)
	setStatus(t, table, "j", "completed")
	if got := rec.sequence(t, 1); got != "j" {
		t.Errorf("delivered %s; want j", got)
	}
}
