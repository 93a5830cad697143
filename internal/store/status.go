package store

// The reads of jobs by status (jobs-by-status, jobs-by-workspace): the
// backlog a promotion takes from, the sweeper's walk, the operator checks'.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
)

// Backlog returns up to limit ids of the workspace's backlogged jobs, oldest
// first: the order they are promoted in. The index is eventually consistent,
// so a listed job may have moved on meanwhile; Transition judges the stored one.
func (s *Store) Backlog(ctx context.Context, ws string, limit int) ([]*job.Job, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		IndexName:              aws.String(IndexJobsByStatus),
		KeyConditionExpression: aws.String("GSI2PK = :pk AND begins_with(GSI2SK, :ws)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": String(statusPK(job.Backlogged, Shard(ws))), ":ws": String(ws + "#"),
		},
		ScanIndexForward: aws.Bool(true),
		Limit:            aws.Int32(int32(limit)),
	})
	if err != nil {
		return nil, fmt.Errorf("backlog of %s: %w", ws, err)
	}
	return decodeRefs(out.Items)
}

// EachUnfinished calls fn with every job in status st across all
// workspaces, from the status index: id, workspace, status, creation and
// last update only (read the job for the rest). The sweeper walks it.
func (s *Store) EachUnfinished(ctx context.Context, st job.Status, fn func(*job.Job) error) error {
	for shard := 0; shard < Shards; shard++ {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(IndexJobsByStatus),
			KeyConditionExpression:    aws.String("GSI2PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": String(statusPK(st, shard))},
		}
		if s.pageSize > 0 {
			in.Limit = aws.Int32(s.pageSize)
		}
		for {
			out, err := s.db.Query(ctx, in)
			if err != nil {
				return fmt.Errorf("jobs in %s: %w", st, err)
			}
			jobs, err := decodeRefs(out.Items)
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if err := fn(j); err != nil {
					return err
				}
			}
			if out.LastEvaluatedKey == nil {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return nil
}

// decodeRefs reads jobs-by-status items: the index holds a few attributes,
// the creation time comes from its sort key.
func decodeRefs(items []map[string]types.AttributeValue) ([]*job.Job, error) {
	out := make([]*job.Job, 0, len(items))
	for _, item := range items {
		var it jobItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return nil, fmt.Errorf("decode job: %w", err)
		}
		parts := strings.Split(it.GSI2SK, "#")
		if len(parts) == 3 {
			it.CreatedAt = parts[1]
		}
		j, err := it.toJob()
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// MarkEnqueued records when the sweeper last put a job on the jobs queue,
// so that it re-sends a possibly lost message only after a while. It changes
// no status and is skipped for a job that has moved on from j.Status.
func (s *Store) MarkEnqueued(ctx context.Context, j *job.Job, at time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       Key(JobPK(j.ID), "JOB"),
		UpdateExpression:          aws.String("SET enqueued_at = :at"),
		ConditionExpression:       aws.String("#status = :status"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": String(Stamp(at)), ":status": String(string(j.Status))},
	})
	var failed *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &failed) {
		return fmt.Errorf("mark job %s enqueued: %w", j.ID, err)
	}
	return nil
}

// EachJobStatus calls fn with the id and status of every job of a
// workspace, from jobs-by-workspace: the operator checks' walk (the slot
// counters' recount, slotsdb; the ledger's audit, ledgerdb), eventually
// consistent, exact when the workspace is quiet.
func (s *Store) EachJobStatus(ctx context.Context, ws string, fn func(id string, st job.Status)) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexJobsByWorkspace),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		ProjectionExpression:      aws.String("job_id, #status"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": String(workspaceJobsPK(ws))},
	}
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("jobs of %s: %w", ws, err)
		}
		for _, item := range out.Items {
			var it jobItem // job_id and status only (the projection)
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return err
			}
			st, _ := job.ParseStatus(it.Status)
			fn(it.JobID, st)
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
