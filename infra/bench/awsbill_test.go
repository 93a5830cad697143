package main

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/store/schema"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The bill of real calls on DynamoDB Local, by AWS's rules: a 5 KB job put
// with its jobs-by-status key (5 WRU, an index entry 1); the same job moved
// to another status in a transaction with a small ledger item (2 x (5 + 1)
// WRU, the entry moved: 2); a write whose condition fails (billed for the
// item it found); a read of two attributes of the 5 KB item (billed whole:
// 2 RRU); nothing counted while the bill is off.
func TestTheBillOfRealCallsFollowsAWSRules(t *testing.T) {
	ctx := context.Background()
	raw := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "bill")
	if err := schema.CreateTable(ctx, raw, table); err != nil {
		t.Fatal(err)
	}
	bill := &awsBill{raw: raw}
	db := dynamodb.New(raw.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, bill.middleware) })
	job := padded("JOB#1", "JOB", 5000, item{"GSI2PK": str("STATUS#queued#03"), "GSI2SK": str("ws#t1"), "status": str("queued")})
	key := item{"PK": str("JOB#1"), "SK": str("JOB")}

	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: job}); err != nil {
		t.Fatal(err)
	}
	if got := bill.snapshot(); got != (awsUnits{}) {
		t.Fatalf("the bill counted %+v while off", got)
	}
	bill.on.Store(true)
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: job}); err != nil {
		t.Fatal(err)
	}
	if got := bill.snapshot(); got.tableWRU != 5 || got.indexWRU != 0 {
		t.Errorf("the same 5 KB job put again: %+v; want 5 WRU, no index write (its entry is the same)", got)
	}
	before := bill.snapshot()
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(table), Key: key,
			UpdateExpression:          aws.String("SET #s = :s, GSI2PK = :pk"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": str("running"), ":pk": str("STATUS#running#03")}}},
		{Put: &types.Put{TableName: aws.String(table), Item: item{"PK": str("WS#t1"), "SK": str("LEDGER#charge#1"), "micros": num("100000")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := bill.snapshot().minus(before); got.txWRU != 2*(5+1) || got.indexWRU != 2 || got.tableWRU != 0 {
		t.Errorf("a transaction moving the job and adding a ledger item: %+v; want 12 WRU in transactions, 2 index", got)
	}
	before = bill.snapshot()
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key,
		UpdateExpression: aws.String("SET #s = :s"), ConditionExpression: aws.String("#s = :was"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": str("completed"), ":was": str("queued")}})
	var refused *types.ConditionalCheckFailedException
	if !errors.As(err, &refused) {
		t.Fatalf("the conditional update: %v; want refused", err)
	}
	if got := bill.snapshot().minus(before); got.tableWRU != 5 || got.refused != 1 || got.indexWRU != 0 {
		t.Errorf("a refused update of the 5 KB job: %+v; want 5 WRU, 1 refused", got)
	}
	before = bill.snapshot()
	_, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#s"), ExpressionAttributeNames: map[string]string{"#s": "status"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := bill.snapshot().minus(before); got.rru != 2 {
		t.Errorf("a strongly consistent read of one attribute of 5 KB: %+v; want 2 RRU (the whole item)", got)
	}
}
