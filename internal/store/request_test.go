package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/schema"
	"genjobs/internal/testenv"
)

// A heartbeat rewrites the job's item; DynamoDB bills the write by the
// item's size. A 60 KiB request must not ride along: the job's item stays
// small, and each progress write costs a unit or two, not sixty.
func TestProgressWritesDoNotCarryTheRequest(t *testing.T) {
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "tbl")
	if err := schema.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	s := store.New(db, table)
	addWorkspace(t, s, "ws_a", 20, 5)
	j := newJob("ws_a", t0)
	j.Request = []byte(`{"prompt":"` + strings.Repeat("x", 60<<10) + `"}`)
	if err := s.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	lease := job.Lease{ID: "w1", Until: t0.Add(time.Minute)}
	cur, err := s.Transition(ctx, j, job.Change{To: job.Processing, Lease: &lease}, t0)
	if err != nil {
		t.Fatal(err)
	}
	p := 0.5
	out, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{ // what a heartbeat pays, measured
		TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "JOB#" + j.ID}, "SK": &types.AttributeValueMemberS{Value: "JOB"}},
		UpdateExpression:          aws.String("SET progress = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberN{Value: "0.5"}},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The job's own attributes (keys, index keys, times, lease) are about
	// 1 KB: one or two units; with the request inside it was 61.
	if wru := aws.ToFloat64(out.ConsumedCapacity.CapacityUnits); wru > 2 {
		t.Errorf("a progress write of a job with a 60 KiB request consumed %.0f write units; want at most 2", wru)
	}
	if _, err := s.Transition(ctx, cur, job.Change{To: job.Sampling, Progress: &p, Holder: "w1", Lease: &lease}, t0); err != nil {
		t.Fatal(err)
	}
	req, err := s.JobRequest(ctx, j.ID)
	if err != nil || string(req) != string(j.Request) {
		t.Errorf("request read back: %d bytes, %v; want the %d written", len(req), err, len(j.Request))
	}
}
