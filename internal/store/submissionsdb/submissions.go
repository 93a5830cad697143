// Package submissionsdb keeps a routed job's provider submission in the
// service's table: its prediction state (job.Submission: the marker of the
// step that submits, the provider's prediction id, the callback tokens'
// hashes, a stashed callback, the cancellation) as pred_* attributes on
// the job's own item, JOB#<id> / JOB. It writes no other attribute and no
// other item: a job's status moves through store.Transition alone. Every
// conditional write recognises its own success when a retry meets it
// (judge).
package submissionsdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
	"genjobs/internal/store"
)

// DB is the store with the provider submissions besides: the provider
// runner and the callbacks move the job through it (store.Transition).
type DB struct {
	*store.Store
}

// New returns the submissions on st's table. It does no I/O.
func New(st *store.Store) *DB {
	return &DB{Store: st}
}

// submissionItem is a routed job's prediction state, kept on the job's own
// item beside its status (job.Submission). None of it is a status: status
// changes go through Transition.
type submissionItem struct {
	Marker       string   `dynamodbav:"pred_marker,omitempty"`
	MarkedAt     string   `dynamodbav:"pred_marked_at,omitempty"`
	Tries        int      `dynamodbav:"pred_tries,omitempty"`
	Key          string   `dynamodbav:"pred_key,omitempty"`
	PredictionID string   `dynamodbav:"pred_id,omitempty"`
	TokenHashes  []string `dynamodbav:"pred_tokens,stringset,omitempty"`
	Callback     string   `dynamodbav:"pred_callback,omitempty"`
	Cancelled    bool     `dynamodbav:"pred_cancelled,omitempty"`
}

// ProviderJob reads a job and its prediction state in one strongly
// consistent read. The job's request, an item of its own (off the hot job
// item), is not read: only a submission needs it (JobRequest). A job
// stored before requests had their own item comes with it.
func (s *DB) ProviderJob(ctx context.Context, id string) (*job.Job, job.Submission, error) {
	var it submissionItem
	j, err := s.JobWith(ctx, id, &it)
	if err != nil {
		return nil, job.Submission{}, err
	}
	sub := job.Submission{Marker: it.Marker, Tries: it.Tries, Key: it.Key, PredictionID: it.PredictionID,
		TokenHashes: it.TokenHashes, Callback: it.Callback, Cancelled: it.Cancelled}
	if it.MarkedAt != "" {
		t, err := job.ParseTime(it.MarkedAt)
		if err != nil {
			return nil, job.Submission{}, fmt.Errorf("job %s: bad time %q", id, it.MarkedAt)
		}
		sub.MarkedAt = t.Time
	}
	return j, sub, nil
}

// notEnded is the condition that a job has not ended.
const notEnded = "#status IN (:s0, :s1, :s2, :s3, :s4, :s5)"

func notEndedValues(v map[string]types.AttributeValue) map[string]types.AttributeValue {
	for i, st := range []job.Status{job.Backlogged, job.Queued, job.Scheduled, job.Processing, job.Sampling, job.IntermediateComplete} {
		v[fmt.Sprintf(":s%d", i)] = store.String(string(st))
	}
	return v
}

// MarkSubmission writes the marker of a submission about to be sent, the
// hash of its callback token, and the submission key unless the job has
// one (job.Submission.Key: the first stays), on the condition that the job has not
// ended, has no prediction id and still carries the marker previous (none
// when empty): of two steps that race to submit, one wins. A retry of the
// write that finds its own marker stored has succeeded. job.ErrConflict:
// another step won, or the job ended.
func (s *DB) MarkSubmission(ctx context.Context, jobID, previous, marker, tokenHash, subKey string, at time.Time) error {
	cond := "attribute_exists(PK) AND attribute_not_exists(pred_id) AND " + notEnded
	values := notEndedValues(map[string]types.AttributeValue{
		":marker": store.String(marker), ":at": store.String(store.Stamp(at)), ":one": store.Number(1), ":key": store.String(subKey),
		":token": &types.AttributeValueMemberSS{Value: []string{tokenHash}},
	})
	if previous == "" {
		cond += " AND attribute_not_exists(pred_marker)"
	} else {
		cond += " AND pred_marker = :previous"
		values[":previous"] = store.String(previous)
	}
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.JobPK(jobID), "JOB"),
		UpdateExpression:          aws.String("SET pred_marker = :marker, pred_marked_at = :at, pred_key = if_not_exists(pred_key, :key) ADD pred_tries :one, pred_tokens :token"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: values,
	})
	return s.judge(ctx, jobID, err, func(sub job.Submission) bool { return sub.Marker == marker })
}

// AddCallbackToken adds the hash of another callback token to a job whose
// prediction is submitted again (Cog): the earlier tokens stay valid.
func (s *DB) AddCallbackToken(ctx context.Context, jobID, tokenHash string) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.JobPK(jobID), "JOB"),
		UpdateExpression:          aws.String("ADD pred_tokens :token, pred_tries :one"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":token": &types.AttributeValueMemberSS{Value: []string{tokenHash}}, ":one": store.Number(1)},
	})
	return s.judge(ctx, jobID, err, func(job.Submission) bool { return false })
}

// RecordPrediction stores the provider's id of the prediction the
// submission marked marker made, even on a job that has ended meanwhile
// (its cancellation needs the id). job.ErrConflict: another submission's
// marker or another id is stored.
func (s *DB) RecordPrediction(ctx context.Context, jobID, marker, predictionID string) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.JobPK(jobID), "JOB"),
		UpdateExpression:          aws.String("SET pred_id = :id"),
		ConditionExpression:       aws.String("pred_marker = :marker AND (attribute_not_exists(pred_id) OR pred_id = :id)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": store.String(predictionID), ":marker": store.String(marker)},
	})
	return s.judge(ctx, jobID, err, func(sub job.Submission) bool { return sub.PredictionID == predictionID })
}

// StashCallback records the blob key of a verified callback's body that
// ended the prediction, for the next step to act on; only while the job
// has not ended.
func (s *DB) StashCallback(ctx context.Context, jobID, blobKey string) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.JobPK(jobID), "JOB"),
		UpdateExpression:          aws.String("SET pred_callback = :key"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND " + notEnded),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: notEndedValues(map[string]types.AttributeValue{":key": store.String(blobKey)}),
	})
	return s.judge(ctx, jobID, err, func(sub job.Submission) bool { return sub.Callback == blobKey })
}

// DropCallback forgets a stashed callback a step could not use (its
// outputs failed to copy for good, or it was unreadable), if it is still
// the one stashed.
func (s *DB) DropCallback(ctx context.Context, jobID, blobKey string) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.JobPK(jobID), "JOB"),
		UpdateExpression:          aws.String("REMOVE pred_callback"),
		ConditionExpression:       aws.String("pred_callback = :key"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":key": store.String(blobKey)},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return nil
	}
	return err
}

// MarkProviderCancelled records that the provider answered the
// cancellation of the job's prediction.
func (s *DB) MarkProviderCancelled(ctx context.Context, jobID string) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.JobPK(jobID), "JOB"),
		UpdateExpression:          aws.String("SET pred_cancelled = :yes"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":yes": &types.AttributeValueMemberBOOL{Value: true}},
	})
	return s.judge(ctx, jobID, err, func(job.Submission) bool { return false })
}

// judge turns a conditional write's failure into job.ErrNotFound or
// job.ErrConflict, unless the stored item shows the write took effect (a
// retry after a lost answer).
func (s *DB) judge(ctx context.Context, jobID string, err error, done func(job.Submission) bool) error {
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		if err != nil {
			return fmt.Errorf("update job %s's submission: %w", jobID, err)
		}
		return nil
	}
	_, sub, rerr := s.ProviderJob(ctx, jobID)
	switch {
	case rerr != nil:
		return rerr
	case done(sub):
		return nil
	}
	return job.ErrConflict
}
