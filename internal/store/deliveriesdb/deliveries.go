// Package deliveriesdb keeps the jobs' webhook deliveries in the service's
// table: one item beside its job, JOB#<job id> / WEBHOOK, on deliveries-due
// (DUE#<shard> / <next attempt>#<job id>) while an attempt is pending. It
// writes no other item. Every conditional write recognises its own success
// when a retry meets it (the claim's id, the attempt's claim, the
// redelivery's token).
package deliveriesdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/webhook"
)

// DB is the store with the webhook deliveries besides: the deliverer reads
// the job a delivery reports through it.
type DB struct {
	*store.Store
}

// New returns the deliveries on st's table. It does no I/O.
func New(st *store.Store) *DB {
	return &DB{Store: st}
}

// A job's webhook delivery lives beside the job: JOB#<id> / WEBHOOK. The
// table's stream sees its writes too; the notifier's filter keeps to SK JOB.
type deliveryItem struct {
	PK, SK      string
	WebhookID   string        `dynamodbav:"webhook_id"`
	JobID       string        `dynamodbav:"job_id"`
	WorkspaceID string        `dynamodbav:"workspace_id"`
	URL         string        `dynamodbav:"url"`
	State       string        `dynamodbav:"state"`
	Attempts    []attemptItem `dynamodbav:"attempts"`
	NextAt      string        `dynamodbav:"next_attempt_at,omitempty"`
	ClaimUntil  string        `dynamodbav:"claim_until,omitempty"`
	ClaimID     string        `dynamodbav:"claim_id,omitempty"`
	CreatedAt   string        `dynamodbav:"created_at"`
	Redelivery  string        `dynamodbav:"redelivery_id,omitempty"` // the last Redeliver's token
	// On deliveries-due while pending: the sweeper finds the overdue ones
	// there without a Scan.
	GSI4PK string `dynamodbav:"GSI4PK,omitempty"`
	GSI4SK string `dynamodbav:"GSI4SK,omitempty"`
}

// duePK spreads pending deliveries over the shards of deliveries-due by
// workspace, as jobs-by-status does; duesK orders a shard by due time.
func duePK(ws string) string { return fmt.Sprintf("DUE#%02d", store.Shard(ws)) }

func dueSK(at time.Time, jobID string) string { return store.Stamp(at) + "#" + jobID }

type attemptItem struct {
	Number     int    `dynamodbav:"attempt"`
	At         string `dynamodbav:"at"`
	StatusCode int    `dynamodbav:"status_code,omitempty"`
	Error      string `dynamodbav:"error,omitempty"`
	NextAt     string `dynamodbav:"next_attempt_at,omitempty"`
	EndedAt    string `dynamodbav:"ended_at,omitempty"`
	// Claim is the claim the attempt was made under: a retried record
	// that finds it knows its own write.
	Claim string `dynamodbav:"claim_id,omitempty"`
}

const deliverySK = "WEBHOOK"

func toAttemptItem(a webhook.Attempt) attemptItem {
	it := attemptItem{Number: a.Number, At: store.Stamp(a.At), StatusCode: a.StatusCode, Error: a.Error}
	if !a.EndedAt.IsZero() {
		it.EndedAt = store.Stamp(a.EndedAt)
	}
	if a.NextAt != nil {
		it.NextAt = store.Stamp(*a.NextAt)
	}
	return it
}

func (it *deliveryItem) delivery() *webhook.Delivery {
	parse := func(s string) time.Time {
		t, _ := job.ParseTime(s)
		return t.Time
	}
	d := &webhook.Delivery{
		JobID: it.JobID, WorkspaceID: it.WorkspaceID, ID: it.WebhookID, URL: it.URL,
		State: webhook.State(it.State), CreatedAt: parse(it.CreatedAt),
	}
	if it.NextAt != "" {
		d.NextAt = parse(it.NextAt)
	}
	if it.ClaimUntil != "" {
		d.ClaimUntil = parse(it.ClaimUntil)
	}
	for _, a := range it.Attempts {
		wa := webhook.Attempt{Number: a.Number, At: parse(a.At), StatusCode: a.StatusCode, Error: a.Error}
		if a.EndedAt != "" {
			wa.EndedAt = parse(a.EndedAt)
		}
		if a.NextAt != "" {
			next := parse(a.NextAt)
			wa.NextAt = &next
		}
		d.Attempts = append(d.Attempts, wa)
	}
	return d
}

// CreateDelivery stores a job's delivery unless it has one, and returns the
// stored delivery: a replayed stream record gets the first one, its id
// included.
func (s *DB) CreateDelivery(ctx context.Context, d *webhook.Delivery) (*webhook.Delivery, error) {
	item, err := attributevalue.MarshalMap(deliveryItem{
		PK: store.JobPK(d.JobID), SK: deliverySK, WebhookID: d.ID, JobID: d.JobID, WorkspaceID: d.WorkspaceID,
		URL: d.URL, State: string(d.State), Attempts: []attemptItem{}, NextAt: store.Stamp(d.NextAt), CreatedAt: store.Stamp(d.CreatedAt),
		GSI4PK: duePK(d.WorkspaceID), GSI4SK: dueSK(d.NextAt, d.JobID),
	})
	if err != nil {
		return nil, fmt.Errorf("encode delivery: %w", err)
	}
	_, err = s.Client().PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.Table()), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	if err != nil && !store.ConditionFailed(err) {
		return nil, fmt.Errorf("create delivery of job %s: %w", d.JobID, err)
	}
	return s.Delivery(ctx, d.JobID)
}

// Delivery reads a job's delivery; webhook.ErrNotFound when it has none.
func (s *DB) Delivery(ctx context.Context, jobID string) (*webhook.Delivery, error) {
	var it deliveryItem
	if err := s.Get(ctx, store.JobPK(jobID), deliverySK, &it); errors.Is(err, store.ErrNotFound) {
		return nil, webhook.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	return it.delivery(), nil
}

// ClaimAttempt takes attempt n of a pending delivery until until under
// claim (the deliveries message's id): only while n attempts minus one are
// recorded and no unexpired claim holds it. A retry of the write that meets
// its own claim (the first answer was lost) succeeds.
func (s *DB) ClaimAttempt(ctx context.Context, jobID string, n int, claim string, until, now time.Time) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.Table()),
		Key:              store.Key(store.JobPK(jobID), deliverySK),
		UpdateExpression: aws.String("SET claim_until = :until, claim_id = :claim"),
		ConditionExpression: aws.String("#state = :pending AND size(attempts) = :done AND " +
			"(attribute_not_exists(claim_until) OR claim_until < :now)"),
		ExpressionAttributeNames: map[string]string{"#state": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until": store.String(store.Stamp(until)), ":now": store.String(store.Stamp(now)), ":claim": store.String(claim),
			":pending": store.String(string(webhook.Pending)), ":done": store.Number(n - 1),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		var old deliveryItem
		if len(failed.Item) > 0 && attributevalue.UnmarshalMap(failed.Item, &old) == nil &&
			old.ClaimID == claim && old.State == string(webhook.Pending) && len(old.Attempts) == n-1 {
			return nil // ours: the answer of the first write was lost
		}
		return webhook.ErrClaimed
	}
	if err != nil {
		return fmt.Errorf("claim attempt %d of job %s's webhook: %w", n, jobID, err)
	}
	return nil
}

// RecordAttempt appends attempt a, made under claim, to a pending delivery
// that has a.Number-1 attempts, and moves it to state (due again at next
// when pending). A retry of the write that finds the attempt recorded
// under the same claim (the first answer was lost) succeeds.
func (s *DB) RecordAttempt(ctx context.Context, jobID string, claim string, a webhook.Attempt, state webhook.State, next time.Time) error {
	it := toAttemptItem(a)
	it.Claim = claim
	av, err := attributevalue.Marshal([]attemptItem{it})
	if err != nil {
		return fmt.Errorf("encode attempt: %w", err)
	}
	// Off deliveries-due once it has ended; due again at next otherwise.
	update := "SET attempts = list_append(attempts, :a), #state = :state REMOVE claim_until, claim_id, next_attempt_at, GSI4PK, GSI4SK"
	values := map[string]types.AttributeValue{
		":a": av, ":state": store.String(string(state)), ":pending": store.String(string(webhook.Pending)), ":done": store.Number(a.Number - 1),
	}
	if state == webhook.Pending {
		update = "SET attempts = list_append(attempts, :a), #state = :state, next_attempt_at = :next, GSI4SK = :due REMOVE claim_until, claim_id"
		values[":next"] = store.String(store.Stamp(next))
		values[":due"] = store.String(dueSK(next, jobID))
	}
	_, err = s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.Table()),
		Key:                                 store.Key(store.JobPK(jobID), deliverySK),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("#state = :pending AND size(attempts) = :done"),
		ExpressionAttributeNames:            map[string]string{"#state": "state"},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		var old deliveryItem
		if claim != "" && len(failed.Item) > 0 && attributevalue.UnmarshalMap(failed.Item, &old) == nil &&
			len(old.Attempts) >= a.Number && old.Attempts[a.Number-1].Claim == claim {
			return nil // recorded by the first write, whose answer was lost
		}
		return fmt.Errorf("record attempt %d of job %s's webhook: %w", a.Number, jobID, webhook.ErrClaimed)
	}
	if err != nil {
		return fmt.Errorf("record attempt %d of job %s's webhook: %w", a.Number, jobID, err)
	}
	return nil
}

// Redeliver makes attempt d.Due() of a job's delivery due at now: sooner
// than its schedule when pending, once more when failed (pending again; the
// schedule resumes from there, and past its end that one attempt is all).
// It writes only while the delivery has d's attempts and none is being
// made: webhook.ErrNotFound without a delivery, webhook.ErrDelivered once it
// succeeded, webhook.ErrClaimed when an attempt is under way or was made
// since d was read. token marks the write: a retry whose first answer was
// lost finds it and succeeds.
func (s *DB) Redeliver(ctx context.Context, d *webhook.Delivery, token string, now time.Time) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.Table()),
		Key:              store.Key(store.JobPK(d.JobID), deliverySK),
		UpdateExpression: aws.String("SET #state = :pending, next_attempt_at = :now, GSI4PK = :pk, GSI4SK = :due, redelivery_id = :token"),
		ConditionExpression: aws.String("attribute_exists(PK) AND #state <> :succeeded AND size(attempts) = :done AND " +
			"(attribute_not_exists(claim_until) OR claim_until < :now)"),
		ExpressionAttributeNames: map[string]string{"#state": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pending": store.String(string(webhook.Pending)), ":succeeded": store.String(string(webhook.Succeeded)), ":now": store.String(store.Stamp(now)),
			":pk": store.String(duePK(d.WorkspaceID)), ":due": store.String(dueSK(now, d.JobID)), ":token": store.String(token), ":done": store.Number(len(d.Attempts)),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		var old deliveryItem
		switch {
		case len(failed.Item) == 0:
			return webhook.ErrNotFound
		case attributevalue.UnmarshalMap(failed.Item, &old) == nil && old.Redelivery == token:
			return nil // ours: the answer of the first write was lost
		case old.State == string(webhook.Succeeded):
			return webhook.ErrDelivered
		}
		return webhook.ErrClaimed
	}
	if err != nil {
		return fmt.Errorf("redeliver job %s's webhook: %w", d.JobID, err)
	}
	return nil
}

// EachOverdueDelivery calls fn with the job id of every pending delivery
// whose attempt was due before before, from deliveries-due (a Query per
// shard, no Scan). The index lags the table: read the delivery before
// acting on it.
func (s *DB) EachOverdueDelivery(ctx context.Context, before time.Time, fn func(jobID string) error) error {
	for shard := 0; shard < store.Shards; shard++ {
		in := &dynamodb.QueryInput{
			TableName:              aws.String(s.Table()),
			IndexName:              aws.String(store.IndexDeliveriesDue),
			KeyConditionExpression: aws.String("GSI4PK = :pk AND GSI4SK < :before"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": store.String(fmt.Sprintf("DUE#%02d", shard)), ":before": store.String(store.Stamp(before)),
			},
		}
		for {
			out, err := s.Client().Query(ctx, in)
			if err != nil {
				return fmt.Errorf("overdue deliveries: %w", err)
			}
			for _, item := range out.Items {
				var it deliveryItem
				if err := attributevalue.UnmarshalMap(item, &it); err != nil {
					return fmt.Errorf("read an overdue delivery: %w", err)
				}
				if err := fn(it.JobID); err != nil {
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

// PendingDeliveries lists every delivery that still has an attempt due. It
// scans the table: for the local stack, whose queue emulator forgets its
// messages when it restarts, and for operators; never on a request path.
func (s *DB) PendingDeliveries(ctx context.Context) ([]*webhook.Delivery, error) {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.Table()),
		FilterExpression:          aws.String("SK = :sk AND #state = :pending"),
		ExpressionAttributeNames:  map[string]string{"#state": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":sk": store.String(deliverySK), ":pending": store.String(string(webhook.Pending))},
	}
	var pending []*webhook.Delivery
	for {
		out, err := s.Client().Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list pending deliveries: %w", err)
		}
		for _, item := range out.Items {
			var it deliveryItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return nil, fmt.Errorf("read a delivery: %w", err)
			}
			pending = append(pending, it.delivery())
		}
		if out.LastEvaluatedKey == nil {
			return pending, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
