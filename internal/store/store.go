package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/billing"
	"genjobs/internal/job"
)

// ErrNotFound is returned for a missing item.
var ErrNotFound = errors.New("store: not found")

// ErrExists is returned when a create meets an item that is already there.
var ErrExists = errors.New("store: already exists")

// Store reads and writes the service's table.
type Store struct {
	db    *dynamodb.Client
	table string
	// pageSize caps the items of one Query call. Zero leaves it to DynamoDB
	// (1 MB pages); tests set it small to exercise the page-following.
	pageSize int32
	listScan int // tests lower MaxListScan
	// limits caches workspaces' credit limits (billing.Micros by id) for
	// the creation condition; a stale one costs a retry, never money.
	limits sync.Map
}

// New returns a Store on the table named table. It does no I/O.
func New(db *dynamodb.Client, table string) *Store {
	return &Store{db: db, table: table}
}

// Client is the DynamoDB client s works with (the aggregate packages share it).
func (s *Store) Client() *dynamodb.Client { return s.db }

// Table is the name of the table s works on.
func (s *Store) Table() string { return s.table }

// QueryPrefix reads, strongly consistently, every item of partition pk
// whose sort key starts with prefix, page after page.
func (s *Store) QueryPrefix(ctx context.Context, pk, prefix string, each func(map[string]types.AttributeValue) error) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": String(pk), ":prefix": String(prefix)},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("query %s %s*: %w", pk, prefix, err)
		}
		for _, item := range out.Items {
			if err := each(item); err != nil {
				return fmt.Errorf("decode %s %s*: %w", pk, prefix, err)
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Key builds a primary key.
func Key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: pk},
		"SK": &types.AttributeValueMemberS{Value: sk},
	}
}

// Get reads one item strongly consistently into out: ErrNotFound when
// there is none.
func (s *Store) Get(ctx context.Context, pk, sk string, out any) error {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            Key(pk, sk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return fmt.Errorf("get %s/%s: %w", pk, sk, err)
	}
	if res.Item == nil {
		return ErrNotFound
	}
	if err := attributevalue.UnmarshalMap(res.Item, out); err != nil {
		return fmt.Errorf("decode %s/%s: %w", pk, sk, err)
	}
	return nil
}

// PutNew writes an item that must not exist yet: ErrExists when it does.
func (s *Store) PutNew(ctx context.Context, item any) error {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return fmt.Errorf("encode item: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                av,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return ErrExists
	}
	return err
}

// WorkspaceItem is a workspace as stored: its record, limits and balance, and
// the slot counters, so that a reservation and a concurrency slot can be
// taken in one conditional write. Package accountsdb writes the record,
// the limits and the top-ups; this package's transactions move the
// balance and the counters.
type WorkspaceItem struct {
	PK, SK        string
	WorkspaceID   string `dynamodbav:"workspace_id"`
	Name          string `dynamodbav:"name"`
	APIEnabled    bool   `dynamodbav:"api_enabled"`
	MaxConcurrent int    `dynamodbav:"max_concurrent"`
	MaxRunning    int    `dynamodbav:"max_running"`
	CreatedAt     string `dynamodbav:"created_at"`
	Available     int64  `dynamodbav:"available_micros"`
	Reserved      int64  `dynamodbav:"reserved_micros"`
	Spent         int64  `dynamodbav:"spent_micros"`
	CreditLimit   int64  `dynamodbav:"credit_limit_micros"`
	Active        int    `dynamodbav:"jobs_active"`
	Running       int    `dynamodbav:"jobs_running"`
	// The compute units, moved like the API balance (billing.UnitBalance),
	// and the plan: its monthly allowance and the last UTC month
	// ("2026-12") it was topped up for (package accountsdb writes them).
	UnitsAvailable int64  `dynamodbav:"cu_available"`
	UnitsReserved  int64  `dynamodbav:"cu_reserved"`
	UnitsSpent     int64  `dynamodbav:"cu_spent"`
	PlanUnits      int64  `dynamodbav:"cu_plan_monthly,omitempty"`
	PlanMonth      string `dynamodbav:"cu_plan_month,omitempty"`
}

// Units is the workspace's compute units.
func (it WorkspaceItem) Units() billing.UnitBalance {
	return billing.UnitBalance{
		Available: billing.Units(it.UnitsAvailable), Reserved: billing.Units(it.UnitsReserved),
		Spent: billing.Units(it.UnitsSpent),
	}
}

// Balance is the workspace's balance.
func (it WorkspaceItem) Balance() billing.Balance {
	return billing.Balance{
		Available: billing.Micros(it.Available), Reserved: billing.Micros(it.Reserved),
		Spent: billing.Micros(it.Spent), CreditLimit: billing.Micros(it.CreditLimit),
	}
}

// Stamp is t as the table stores instants (job.TimeOf).
func Stamp(t time.Time) string { return job.TimeOf(t).String() }

func cancelReason(err error, i int) string { return CancelReason(err, i) }

// ConditionFailed tells a write refused by its condition.
func ConditionFailed(err error) bool {
	var failed *types.ConditionalCheckFailedException
	return errors.As(err, &failed)
}

// CancelReason is the cancellation code of item i of a cancelled
// transaction, or "" when err is something else.
func CancelReason(err error, i int) string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || i >= len(tce.CancellationReasons) {
		return ""
	}
	return aws.ToString(tce.CancellationReasons[i].Code)
}
