// Package idempotencydb is the Idempotency-Key item of the service's table
// (IDEM#<ws>#<sha256 of the key> / IDEM): a client's key with its first
// request's hash and job, for 24 hours (expires_at, the table's TTL). The
// item is only ever put in a job's creation transaction (store.CreateJob,
// which composes it with the job, the workspace's slots and reservation
// and the ledger entry) and read back only from that transaction's
// cancellation: this package gives the put and the judgement of a key
// found stored, and sits below package store, which imports it.
package idempotencydb

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
)

// item records an Idempotency-Key's first request, for 24 hours
// (expires_at is the table's TTL attribute).
type item struct {
	PK, SK      string
	RequestHash string `dynamodbav:"request_hash"`
	JobID       string `dynamodbav:"job_id"`
	CreatedAt   string `dynamodbav:"created_at"`
	ExpiresAt   int64  `dynamodbav:"expires_at"`
}

// pk scopes a key to its workspace; the key is hashed, so any 255
// printable characters make a short key.
func pk(ws, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "IDEM#" + ws + "#" + hex.EncodeToString(sum[:])
}

// Put is the put of job j's key (j.Idempotency) into table, for j's
// creation transaction: on the condition that the key is new or expired,
// returning the stored item when it is not (Judge reads it).
func Put(table string, j *job.Job) (types.TransactWriteItem, error) {
	k := j.Idempotency
	av, err := attributevalue.MarshalMap(item{
		PK: pk(j.WorkspaceID, k.Key), SK: "IDEM",
		RequestHash: k.RequestHash, JobID: j.ID, CreatedAt: job.TimeOf(j.CreatedAt).String(), ExpiresAt: k.Expires.Unix(),
	})
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("encode idempotency key: %w", err)
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(table), Item: av,
		// An expired key is forgotten: TTL deletes it in its own time.
		ConditionExpression: aws.String("attribute_not_exists(PK) OR expires_at < :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(j.CreatedAt.Unix(), 10)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// Judge tells a creation whose key is already stored (old, the item its
// transaction's cancellation returned) what it is: a replay of the same
// request (*job.Replayed with the first job), another request under the
// key (job.ErrKeyReused), or one whose first is still being written
// (job.ErrKeyInFlight).
func Judge(j *job.Job, old map[string]types.AttributeValue) error {
	var it item
	if old == nil || attributevalue.UnmarshalMap(old, &it) != nil {
		return job.ErrKeyInFlight
	}
	if it.RequestHash != j.Idempotency.RequestHash {
		return job.ErrKeyReused
	}
	return &job.Replayed{JobID: it.JobID}
}
