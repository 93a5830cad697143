package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
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

// jobItem is a job as stored. Times are job.TimeLayout text so that they sort.
type jobItem struct {
	PK, SK         string
	GSI1PK, GSI1SK string
	GSI2PK         string   `dynamodbav:",omitempty"`
	GSI2SK         string   `dynamodbav:",omitempty"`
	JobID          string   `dynamodbav:"job_id"`
	WorkspaceID    string   `dynamodbav:"workspace_id"`
	Status         string   `dynamodbav:"status"`
	CreatedAt      string   `dynamodbav:"created_at"`
	UpdatedAt      string   `dynamodbav:"updated_at,omitempty"`
	CompletedAt    string   `dynamodbav:"completed_at,omitempty"`
	Result         string   `dynamodbav:"result,omitempty"`
	ErrorCode      string   `dynamodbav:"error_code,omitempty"`
	ErrorMessage   string   `dynamodbav:"error_message,omitempty"`
	Progress       *float64 `dynamodbav:"progress,omitempty"`
	Endpoint       string   `dynamodbav:"endpoint,omitempty"`
	Request        string   `dynamodbav:"request,omitempty"`
	WebhookURL     string   `dynamodbav:"webhook_url,omitempty"`
}

func jobPK(id string) string           { return "JOB#" + id }
func workspaceJobsPK(ws string) string { return "WSJOBS#" + ws }
func statusPK(st job.Status) string    { return "STATUS#" + string(st) }

func toJobItem(j *job.Job) jobItem {
	created := job.At(j.CreatedAt).String()
	updated := j.UpdatedAt
	if updated.IsZero() {
		updated = j.CreatedAt
	}
	it := jobItem{
		PK: jobPK(j.ID), SK: "JOB",
		GSI1PK: workspaceJobsPK(j.WorkspaceID), GSI1SK: created + "#" + j.ID,
		JobID: j.ID, WorkspaceID: j.WorkspaceID, Status: string(j.Status),
		CreatedAt: created, UpdatedAt: job.At(updated).String(),
		Result: string(j.Result), Progress: j.Progress,
		Endpoint: j.Endpoint, Request: string(j.Request), WebhookURL: j.WebhookURL,
	}
	if !j.Status.Terminal() {
		it.GSI2PK = statusPK(j.Status)
		it.GSI2SK = j.WorkspaceID + "#" + created + "#" + j.ID
	}
	if j.CompletedAt != nil {
		it.CompletedAt = job.At(*j.CompletedAt).String()
	}
	if j.Error != nil {
		it.ErrorCode, it.ErrorMessage = j.Error.Code, j.Error.Message
	}
	return it
}

func (it *jobItem) toJob() (*job.Job, error) {
	st, ok := job.ParseStatus(it.Status)
	if !ok {
		return nil, fmt.Errorf("job %s has unknown status %q", it.JobID, it.Status)
	}
	j := &job.Job{
		ID: it.JobID, WorkspaceID: it.WorkspaceID, Status: st, Progress: it.Progress,
		Endpoint: it.Endpoint, WebhookURL: it.WebhookURL,
	}
	var err error
	parse := func(s string) time.Time {
		t, e := job.ParseTime(s)
		if e != nil && err == nil {
			err = fmt.Errorf("job %s: bad time %q", it.JobID, s)
		}
		return t.Time
	}
	j.CreatedAt = parse(it.CreatedAt)
	if it.UpdatedAt != "" {
		j.UpdatedAt = parse(it.UpdatedAt)
	}
	if it.CompletedAt != "" {
		t := parse(it.CompletedAt)
		j.CompletedAt = &t
	}
	if it.Result != "" {
		j.Result = json.RawMessage(it.Result)
	}
	if it.Request != "" {
		j.Request = json.RawMessage(it.Request)
	}
	if it.ErrorCode != "" {
		j.Error = &job.Error{Code: it.ErrorCode, Message: it.ErrorMessage}
	}
	return j, err
}

// CreateJob stores a new job. Its id must be new.
func (s *Store) CreateJob(ctx context.Context, j *job.Job) error {
	if err := s.putNew(ctx, toJobItem(j)); err != nil {
		return fmt.Errorf("create job %s: %w", j.ID, err)
	}
	return nil
}

// Job reads a job by id, strongly consistently, whatever its workspace: the
// caller checks ownership.
func (s *Store) Job(ctx context.Context, id string) (*job.Job, error) {
	var it jobItem
	if err := s.get(ctx, jobPK(id), "JOB", &it); errors.Is(err, ErrNotFound) {
		return nil, job.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	return it.toJob()
}

type cursor struct {
	After string `json:"a"` // GSI1SK of the last job returned
	Query string `json:"q"` // binds the cursor to its workspace and query
}

func queryBinding(ws string, st job.Status) string {
	sum := sha256.Sum256([]byte(ws + "\x00" + string(st)))
	return hex.EncodeToString(sum[:8])
}

func decodeCursor(text, ws string, st job.Status) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return "", job.ErrBadCursor
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Query != queryBinding(ws, st) {
		return "", job.ErrBadCursor
	}
	created, id, ok := strings.Cut(c.After, "#")
	if _, err := job.ParseTime(created); !ok || err != nil || !job.ValidID(id) {
		return "", job.ErrBadCursor
	}
	return c.After, nil
}

func encodeCursor(after, ws string, st job.Status) string {
	b, _ := json.Marshal(cursor{After: after, Query: queryBinding(ws, st)})
	return base64.RawURLEncoding.EncodeToString(b)
}

// ListJobs returns up to q.Limit jobs of workspace ws, newest first. It
// follows DynamoDB's pages (1 MB each, fewer after a status filter) until the
// limit is met or the jobs run out.
func (s *Store) ListJobs(ctx context.Context, ws string, q job.Query) (job.Page, error) {
	if q.Limit < 1 || q.Limit > job.MaxListLimit {
		return job.Page{}, fmt.Errorf("list jobs: limit %d is outside 1..%d", q.Limit, job.MaxListLimit)
	}
	var after string
	if q.Cursor != "" {
		var err error
		if after, err = decodeCursor(q.Cursor, ws, q.Status); err != nil {
			return job.Page{}, err
		}
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexJobsByWorkspace),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(workspaceJobsPK(ws))},
		ScanIndexForward:          aws.Bool(false),
	}
	if after != "" {
		in.KeyConditionExpression = aws.String("GSI1PK = :pk AND GSI1SK < :after")
		in.ExpressionAttributeValues[":after"] = str(after)
	}
	if q.Status != "" {
		in.FilterExpression = aws.String("#status = :status")
		in.ExpressionAttributeNames = map[string]string{"#status": "status"}
		in.ExpressionAttributeValues[":status"] = str(string(q.Status))
	}
	var page job.Page
	for {
		// Without a filter, asking for exactly what is missing saves reads.
		in.Limit = nil
		if remaining := int32(q.Limit - len(page.Jobs)); q.Status == "" {
			in.Limit = aws.Int32(remaining)
		}
		if s.pageSize > 0 && (in.Limit == nil || *in.Limit > s.pageSize) {
			in.Limit = aws.Int32(s.pageSize)
		}
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return job.Page{}, fmt.Errorf("list jobs of %s: %w", ws, err)
		}
		for i, item := range out.Items {
			var it jobItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return job.Page{}, fmt.Errorf("decode job: %w", err)
			}
			j, err := it.toJob()
			if err != nil {
				return job.Page{}, err
			}
			page.Jobs = append(page.Jobs, j)
			if len(page.Jobs) == q.Limit {
				if i < len(out.Items)-1 || out.LastEvaluatedKey != nil {
					page.NextCursor = encodeCursor(it.GSI1SK, ws, q.Status)
				}
				return page, nil
			}
		}
		if out.LastEvaluatedKey == nil {
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
