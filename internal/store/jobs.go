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

	"genjobs/internal/billing"
	"genjobs/internal/job"
)

// jobItem is a job as stored. Times are job.TimeLayout text so that they sort.
type jobItem struct {
	PK, SK         string
	GSI1PK, GSI1SK string
	GSI2PK         string `dynamodbav:",omitempty"`
	GSI2SK         string `dynamodbav:",omitempty"`
	// GSI5PK, GSI5SK: the job in its endpoint's partition of
	// jobs-by-filter (jobpages.go); set at creation, never changed.
	GSI5PK       string   `dynamodbav:",omitempty"`
	GSI5SK       string   `dynamodbav:",omitempty"`
	JobID        string   `dynamodbav:"job_id"`
	WorkspaceID  string   `dynamodbav:"workspace_id"`
	Status       string   `dynamodbav:"status"`
	CreatedAt    string   `dynamodbav:"created_at"`
	UpdatedAt    string   `dynamodbav:"updated_at,omitempty"`
	QueuedAt     string   `dynamodbav:"queued_at,omitempty"`
	EnqueuedAt   string   `dynamodbav:"enqueued_at,omitempty"`
	CompletedAt  string   `dynamodbav:"completed_at,omitempty"`
	Result       string   `dynamodbav:"result,omitempty"` // JSON list of output blob keys
	ErrorCode    string   `dynamodbav:"error_code,omitempty"`
	ErrorMessage string   `dynamodbav:"error_message,omitempty"`
	Progress     *float64 `dynamodbav:"progress,omitempty"`
	Endpoint     string   `dynamodbav:"endpoint,omitempty"`
	// Request is set only on jobs stored before the request got its own
	// item (requestItem): read, never written.
	Request    string `dynamodbav:"request,omitempty"`
	BaseURL    string `dynamodbav:"base_url,omitempty"`
	WebhookURL string `dynamodbav:"webhook_url,omitempty"`
	LeaseID    string `dynamodbav:"lease_id,omitempty"`
	LeaseUntil string `dynamodbav:"lease_until,omitempty"`
	Attempts   int    `dynamodbav:"attempts,omitempty"`
	Lane       string `dynamodbav:"lane,omitempty"`
	Price      int64  `dynamodbav:"price_micros"`
	// Settlement is "charge" or "release" once the job's reservation is
	// settled: written with the terminal status, on the condition that it
	// is absent, so nothing is settled twice.
	Settlement string `dynamodbav:"settlement,omitempty"`
	// Provider and DeadlineMinutes: a routed job's (job.Job.Provider).
	Provider        string `dynamodbav:"provider,omitempty"`
	DeadlineMinutes int    `dynamodbav:"deadline_minutes,omitempty"`
	RouteModel      string `dynamodbav:"route_model,omitempty"`
	// Currency ("usd" or "cu"; absent on jobs stored before compute units:
	// USD) and, for a CU job, its price in units: what its reservation and
	// settlement move. Source, CreatedBy and PersonID say who made it.
	Currency  string `dynamodbav:"currency,omitempty"`
	Units     int64  `dynamodbav:"price_units,omitempty"`
	Source    string `dynamodbav:"source,omitempty"`
	CreatedBy string `dynamodbav:"created_by,omitempty"`
	PersonID  string `dynamodbav:"person_id,omitempty"`
	StartedAt string `dynamodbav:"started_at,omitempty"`
}

// requestItem is a job's request, apart from the job's item: every status,
// progress and lease write rewrites the job's item whole (DynamoDB bills
// an update by the item's size), and a request can be 64 KiB. It shares
// the job's partition and is written in the job's creation transaction.
type requestItem struct {
	PK, SK  string
	Request string `dynamodbav:"request"`
	// The job in its source's partition of jobs-by-filter (jobpages.go).
	GSI5PK string `dynamodbav:",omitempty"`
	GSI5SK string `dynamodbav:",omitempty"`
}

const requestSK = "REQUEST"

func workspaceJobsPK(ws string) string { return "WSJOBS#" + ws }

func statusPK(st job.Status, shard int) string {
	return fmt.Sprintf("STATUS#%s#%02d", st, shard)
}

// statusSK orders a workspace's jobs of one status by creation.
func statusSK(ws string, created time.Time, id string) string {
	return ws + "#" + job.TimeOf(created).String() + "#" + id
}

func toJobItem(j *job.Job) jobItem {
	created := job.TimeOf(j.CreatedAt).String()
	updated := j.UpdatedAt
	if updated.IsZero() {
		updated = j.CreatedAt
	}
	it := jobItem{
		PK: JobPK(j.ID), SK: "JOB",
		GSI1PK: workspaceJobsPK(j.WorkspaceID), GSI1SK: created + "#" + j.ID,
		JobID: j.ID, WorkspaceID: j.WorkspaceID, Status: string(j.Status),
		CreatedAt: created, UpdatedAt: job.TimeOf(updated).String(),
		Progress: j.Progress, Endpoint: j.Endpoint,
		BaseURL: j.BaseURL, WebhookURL: j.WebhookURL, Attempts: j.Attempts,
		Price: int64(j.Price), Provider: j.Provider, DeadlineMinutes: int(j.Deadline / time.Minute), Lane: j.Lane,
		RouteModel: j.RouteModel, Currency: string(j.Currency), Units: int64(j.Units),
		Source: j.Source, CreatedBy: j.CreatedBy, PersonID: j.PersonID,
	}
	if j.StartedAt != nil {
		it.StartedAt = Stamp(*j.StartedAt)
	}
	if len(j.Outputs) > 0 {
		b, _ := json.Marshal(j.Outputs)
		it.Result = string(b)
	}
	if j.Endpoint != "" {
		it.GSI5PK, it.GSI5SK = filterPK(j.WorkspaceID, "endpoint", j.Endpoint), it.GSI1SK
	}
	if !j.Status.Terminal() {
		it.GSI2PK = statusPK(j.Status, Shard(j.WorkspaceID))
		it.GSI2SK = statusSK(j.WorkspaceID, j.CreatedAt, j.ID)
	}
	if j.QueuedAt != nil {
		it.QueuedAt = Stamp(*j.QueuedAt)
	}
	if j.CompletedAt != nil {
		it.CompletedAt = Stamp(*j.CompletedAt)
	}
	if j.Error != nil {
		it.ErrorCode, it.ErrorMessage = j.Error.Code, j.Error.Message
	}
	if j.Lease.ID != "" {
		it.LeaseID, it.LeaseUntil = j.Lease.ID, Stamp(j.Lease.Until)
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
		Endpoint: it.Endpoint, BaseURL: it.BaseURL, WebhookURL: it.WebhookURL, Attempts: it.Attempts, Lane: it.Lane,
		Price: billing.Micros(it.Price), Provider: it.Provider, Deadline: time.Duration(it.DeadlineMinutes) * time.Minute,
		RouteModel: it.RouteModel, Currency: billing.Currency(it.Currency), Units: billing.Units(it.Units),
		Source: it.Source, CreatedBy: it.CreatedBy, PersonID: it.PersonID,
	}
	var err error
	parse := func(s string) time.Time {
		t, e := job.ParseTime(s)
		if e != nil && err == nil {
			err = fmt.Errorf("job %s: bad time %q", it.JobID, s)
		}
		return t.Time
	}
	optional := func(s string) *time.Time {
		if s == "" {
			return nil
		}
		t := parse(s)
		return &t
	}
	j.CreatedAt = parse(it.CreatedAt)
	if it.UpdatedAt != "" {
		j.UpdatedAt = parse(it.UpdatedAt)
	}
	j.QueuedAt, j.EnqueuedAt, j.CompletedAt = optional(it.QueuedAt), optional(it.EnqueuedAt), optional(it.CompletedAt)
	j.StartedAt = optional(it.StartedAt)
	if it.LeaseID != "" {
		j.Lease = job.Lease{ID: it.LeaseID, Until: parse(it.LeaseUntil)}
	}
	if it.Result != "" {
		if e := json.Unmarshal([]byte(it.Result), &j.Outputs); e != nil && err == nil {
			err = fmt.Errorf("job %s: bad result %q", it.JobID, it.Result)
		}
	}
	if it.Request != "" {
		j.Request = json.RawMessage(it.Request)
	}
	if it.ErrorCode != "" {
		j.Error = &job.Error{Code: it.ErrorCode, Message: it.ErrorMessage}
	}
	return j, err
}

// JobRequest reads a job's validated request (the worker's input), once
// per attempt, strongly consistently.
func (s *Store) JobRequest(ctx context.Context, id string) (json.RawMessage, error) {
	var it requestItem
	err := s.Get(ctx, JobPK(id), requestSK, &it)
	if errors.Is(err, ErrNotFound) { // a job stored before requests had their own item
		j, err := s.Job(ctx, id)
		if err != nil {
			return nil, err
		}
		return j.Request, nil
	}
	if err != nil {
		return nil, err
	}
	return json.RawMessage(it.Request), nil
}

// Job reads a job by id, strongly consistently, whatever its workspace: the
// caller checks ownership. Its Request is not read (JobRequest reads it).
func (s *Store) Job(ctx context.Context, id string) (*job.Job, error) {
	var it jobItem
	if err := s.Get(ctx, JobPK(id), "JOB", &it); errors.Is(err, ErrNotFound) {
		return nil, job.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	return it.toJob()
}

// JobWithRequest reads a job and its request in one strongly consistent
// round trip, what Job and JobRequest read in two: a Query of the job's
// partition from its item to its request's (the person item between them
// is skipped). Both items are at most 400 KB, under a Query page's 1 MB.
func (s *Store) JobWithRequest(ctx context.Context, id string) (*job.Job, json.RawMessage, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("PK = :pk AND SK BETWEEN :job AND :request"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": String(JobPK(id)), ":job": String("JOB"), ":request": String(requestSK),
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("get job %s with its request: %w", id, err)
	}
	var j *job.Job
	var request json.RawMessage
	for _, item := range out.Items {
		sk, _ := item["SK"].(*types.AttributeValueMemberS)
		switch {
		case sk == nil:
		case sk.Value == "JOB":
			if j, err = decodeJob(item); err != nil {
				return nil, nil, err
			}
		case sk.Value == requestSK:
			r, _ := item["request"].(*types.AttributeValueMemberS)
			if r == nil {
				return nil, nil, fmt.Errorf("decode job %s: its request item has no request", id)
			}
			request = json.RawMessage(r.Value)
		}
	}
	if j == nil {
		return nil, nil, job.ErrNotFound
	}
	if request == nil { // a job stored before requests had their own item
		request = j.Request
	}
	return j, request, nil
}

// JobWith reads a job as Job does, and decodes the same item into extra
// too: another aggregate's attributes on the job's item (package
// submissionsdb's prediction state) come with the job in one strongly
// consistent read.
func (s *Store) JobWith(ctx context.Context, id string, extra any) (*job.Job, error) {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: Key(JobPK(id), "JOB"), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	if res.Item == nil {
		return nil, job.ErrNotFound
	}
	j, err := decodeJob(res.Item)
	if err != nil {
		return nil, err
	}
	if err := attributevalue.UnmarshalMap(res.Item, extra); err != nil {
		return nil, fmt.Errorf("decode job %s: %w", id, err)
	}
	return j, nil
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

// MaxListScan bounds the jobs one filtered list request reads: a rare
// status must not make a request read a workspace's whole history. A page
// that hits the bound comes back short (even empty) with a cursor to go on.
const MaxListScan = 2000

func (s *Store) maxListScan() int {
	if s.listScan > 0 {
		return s.listScan
	}
	return MaxListScan
}

// ListJobs returns up to q.Limit jobs of workspace ws, newest first. It
// follows DynamoDB's pages until the limit is met, the jobs run out or, under
// a status filter, MaxListScan jobs have been read.
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
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": String(workspaceJobsPK(ws))},
		ScanIndexForward:          aws.Bool(false),
	}
	if after != "" {
		in.KeyConditionExpression = aws.String("GSI1PK = :pk AND GSI1SK < :after")
		in.ExpressionAttributeValues[":after"] = String(after)
	}
	if q.Status != "" {
		in.FilterExpression = aws.String("#status = :status")
		in.ExpressionAttributeNames = map[string]string{"#status": "status"}
		in.ExpressionAttributeValues[":status"] = String(string(q.Status))
	}
	var page job.Page
	scanned := 0
	for {
		// Without a filter, asking for exactly what is missing saves reads;
		// with one, the read budget bounds the call.
		remaining := q.Limit - len(page.Jobs)
		if q.Status != "" {
			remaining = s.maxListScan() - scanned
		}
		in.Limit = aws.Int32(int32(remaining))
		if s.pageSize > 0 && *in.Limit > s.pageSize {
			in.Limit = aws.Int32(s.pageSize)
		}
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return job.Page{}, fmt.Errorf("list jobs of %s: %w", ws, err)
		}
		scanned += int(out.ScannedCount)
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
		if scanned >= s.maxListScan() {
			var last struct{ GSI1SK string }
			if err := attributevalue.UnmarshalMap(out.LastEvaluatedKey, &last); err != nil {
				return job.Page{}, fmt.Errorf("decode list position: %w", err)
			}
			page.NextCursor = encodeCursor(last.GSI1SK, ws, q.Status)
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// String is a string attribute value.
func String(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// maxBatchGet is how many keys one BatchGetItem takes.
const maxBatchGet = 100

// JobsByID reads whole jobs by id, in BatchGetItem calls of up to 100
// keys, eventually consistent: a list page's jobs (ListJobs reads an index
// that holds only part of each) for a page that shows their endpoint,
// price and source. Jobs that are not found (or that DynamoDB left
// unprocessed four times) are left out; the order is the ids'. Requests
// are not read.
func (s *Store) JobsByID(ctx context.Context, ids []string) ([]*job.Job, error) {
	found := make(map[string]*job.Job, len(ids))
	for start := 0; start < len(ids); start += maxBatchGet {
		keys := make([]map[string]types.AttributeValue, 0, maxBatchGet)
		for _, id := range ids[start:min(start+maxBatchGet, len(ids))] {
			keys = append(keys, Key(JobPK(id), "JOB"))
		}
		items := map[string]types.KeysAndAttributes{s.table: {Keys: keys}}
		// Keys DynamoDB leaves unprocessed (throughput) are asked again,
		// a few times, spaced out; any still left are not found.
		for attempt := 0; attempt < 4 && len(items[s.table].Keys) > 0; attempt++ {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
				}
			}
			out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: items})
			if err != nil {
				return nil, fmt.Errorf("get %d jobs: %w", len(items[s.table].Keys), err)
			}
			for _, item := range out.Responses[s.table] {
				j, err := decodeJob(item)
				if err != nil {
					return nil, err
				}
				found[j.ID] = j
			}
			items = out.UnprocessedKeys
		}
	}
	jobs := make([]*job.Job, 0, len(found))
	for _, id := range ids {
		if j, ok := found[id]; ok {
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}
