package store_test

import (
	"context"
	"errors"
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

// JobWithRequest reads a job and its request in one Query: the request's
// own item, or, for a job stored before requests had one, the request
// kept in the job's item; an unknown job is job.ErrNotFound.
func TestJobWithRequestReadsBothInOneQuery(t *testing.T) {
	ctx := context.Background()
	s, calls := countedStore(t)
	addWorkspace(t, s, "ws_a", 20, 5)
	j := newJob("ws_a", t0)
	if err := s.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	calls.take()
	got, req, err := s.JobWithRequest(ctx, j.ID)
	if err != nil || got.ID != j.ID || got.WorkspaceID != "ws_a" || got.Status != job.Queued || string(req) != `{"prompt":"x"}` {
		t.Fatalf("JobWithRequest: %+v, %s, %v; want the job and its request %s", got, req, err, j.Request)
	}
	if n := calls.take(); len(n) != 1 || n["Query"] != 1 {
		t.Errorf("JobWithRequest made %v; want one Query", n)
	}

	// A job stored before requests had their own item.
	old := newJob("ws_a", t0.Add(time.Second))
	if err := s.CreateJob(ctx, old); err != nil {
		t.Fatal(err)
	}
	db := s.Client()
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table()), Key: store.Key(store.JobPK(old.ID), "REQUEST")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table()), Key: store.Key(store.JobPK(old.ID), "JOB"),
		UpdateExpression: aws.String("SET #r = :r"), ExpressionAttributeNames: map[string]string{"#r": "request"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: `{"prompt":"old"}`}},
	}); err != nil {
		t.Fatal(err)
	}
	if got, req, err := s.JobWithRequest(ctx, old.ID); err != nil || got.ID != old.ID || string(req) != `{"prompt":"old"}` {
		t.Errorf("a job with its request in its item: %+v, %s, %v", got, req, err)
	}
	if _, _, err := s.JobWithRequest(ctx, job.NewID(t0)); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("an unknown job: %v; want job.ErrNotFound", err)
	}
}
