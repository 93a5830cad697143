// Package consoledb keeps the console's records in the service's table:
// memberships, sign-in sessions and top-ups by checkout. A DB is the
// accounts (accountsdb.DB, over the store) with these records besides;
// money still moves through the accounts' top-up (accountsdb.DB.TopUpWith).
package consoledb

import (
	"time"

	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
	"genjobs/internal/webhook"
)

// DB is the store with the console's records.
type DB struct {
	*accountsdb.DB
	styles *stylesdb.DB
}

// New returns the console's records on st's table. It does no I/O.
func New(st *store.Store) *DB {
	return &DB{DB: accountsdb.New(st), styles: stylesdb.New(st)}
}

// SharedStyle resolves a share link's token to its style, for the
// console's page of the link (stylesdb.DB.SharedStyle).
func (d *DB) SharedStyle(ctx context.Context, token string) (style.Style, error) {
	return d.styles.SharedStyle(ctx, token)
}

// Redeliver makes a job's webhook's next attempt due now, for the job
// page's "Deliver again" (deliveriesdb.DB.Redeliver, what the operator's
// webhook redeliver writes).
func (d *DB) Redeliver(ctx context.Context, del *webhook.Delivery, token string, now time.Time) error {
	return deliveriesdb.New(d.Store).Redeliver(ctx, del, token, now)
}

// Delivery reads a job's webhook delivery, for the console's job page
// (deliveriesdb.DB.Delivery, what GET /jobs/{id}/deliveries reads).
func (d *DB) Delivery(ctx context.Context, jobID string) (*webhook.Delivery, error) {
	return deliveriesdb.New(d.Store).Delivery(ctx, jobID)
}

// transact writes items in one transaction through the store (which retries
// a TransactionConflict).
func (d *DB) transact(ctx context.Context, items []types.TransactWriteItem) error {
	return d.Store.Transact(ctx, items)
}

func isConditionFailed(err error) bool { return store.ConditionFailed(err) }

func cancelReason(err error, i int) string { return store.CancelReason(err, i) }

// queryPrefix reads, strongly consistently, every item of partition pk
// whose sort key starts with prefix.
func (d *DB) queryPrefix(ctx context.Context, pk, prefix string, each func(map[string]types.AttributeValue) error) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.Table()),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": store.String(pk), ":prefix": store.String(prefix)},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		out, err := d.Client().Query(ctx, in)
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
