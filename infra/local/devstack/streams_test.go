package devstack_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
)

// TestTheStackPlaysTheNotifiersStreamMapping plays the notifier's mapping
// (sam/testdata/notifier.yaml, as template.yaml will have it) on the local
// stack's own table and queues, wired as `make run` wires it.
func TestTheStackPlaysTheNotifiersStreamMapping(t *testing.T) {
	local, _, _, _ := stackWith(t)
	ctx := context.Background()
	tpl, err := sam.Load("../sam/testdata/notifier.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := local.ProvisionQueues(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	dlq, err := local.QueueURL("NotifierDLQ")
	if err != nil || !strings.HasSuffix(dlq, "/"+local.Table+"-notifier-dlq") || local.Resolve()["NotifierDLQ"] != dlq {
		t.Fatalf("NotifierDLQ at %q (%v); resolved as %q", dlq, err, local.Resolve()["NotifierDLQ"])
	}
	if err := local.ProvisionQueues(ctx, tpl); err != nil { // a second run finds them
		t.Fatal(err)
	}
	if arn, err := local.StreamARN(ctx, "Table"); err != nil || !strings.Contains(arn, "table/"+local.Table+"/stream/") {
		t.Fatalf("stream %q, %v", arn, err)
	}
	if _, err := local.StreamARN(ctx, "Other"); err == nil {
		t.Error("a table the stack does not have has a stream")
	}

	got := make(chan events.DynamoDBEventRecord, 10)
	o := local.TriggerOptions()
	o.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	runCtx, stop := context.WithCancel(ctx)
	runner, err := triggers.Start(runCtx, tpl, map[string]triggers.Handlers{
		"NotifierFunction": {Stream: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			for _, r := range ev.Records {
				got <- r
			}
			return events.DynamoDBEventResponse{}, nil
		}},
	}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); runner.Wait() }()

	key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "JOB#j1"}, "SK": &types.AttributeValueMemberS{Value: "JOB"}}
	item := map[string]types.AttributeValue{"status": &types.AttributeValueMemberS{Value: "processing"}, "webhook_url": &types.AttributeValueMemberS{Value: "http://127.0.0.1:9/hook"}}
	for k, v := range key {
		item[k] = v
	}
	if _, err := local.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(local.Table), Item: item}); err != nil {
		t.Fatal(err)
	}
	if _, err := local.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(local.Table), Key: key, UpdateExpression: aws.String("SET #s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "completed"}},
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.EventName != "MODIFY" || r.Change.NewImage["status"].String() != "completed" || r.Change.OldImage["status"].String() != "processing" {
			t.Errorf("record %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the terminal write never reached the handler")
	}
}
