// Package leasedb keeps named leases in the service's table: LEASE#<name> /
// LEASE, an item only one holder has at a time, and nothing else.
package leasedb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/store"
)

// DB is the store with the leases besides.
type DB struct {
	*store.Store
}

// New returns the leases on st's table. It does no I/O.
func New(st *store.Store) *DB {
	return &DB{Store: st}
}

// A lease is a named item only one holder has at a time: the sweeper takes
// one per run so that two runs (a slow one and the next minute's, or an
// EventBridge duplicate) never overlap. Reserved concurrency 1 would do
// the same, but an account at Lambda's starting quota (10) cannot reserve
// any. The item expires (TTL) a day after its lease.

func leaseKey(name string) map[string]types.AttributeValue {
	return store.Key("LEASE#"+name, "LEASE")
}

// TakeLease gives the lease name to holder until until, unless another
// holder has it at now, and answers whether holder has it. holder must be
// unique to the taker: a retry of a take that succeeded finds its own
// holder and succeeds again.
func (s *DB) TakeLease(ctx context.Context, name, holder string, until, now time.Time) (bool, error) {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.Table()),
		Key:                 leaseKey(name),
		UpdateExpression:    aws.String("SET holder = :h, lease_until = :until, expires_at = :expires"),
		ConditionExpression: aws.String("attribute_not_exists(PK) OR lease_until <= :now OR holder = :h"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":h":       &types.AttributeValueMemberS{Value: holder},
			":until":   &types.AttributeValueMemberN{Value: strconv.FormatInt(until.UnixMilli(), 10)},
			":now":     &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
			":expires": &types.AttributeValueMemberN{Value: strconv.FormatInt(until.Add(24*time.Hour).Unix(), 10)},
		},
	})
	var held *types.ConditionalCheckFailedException
	if errors.As(err, &held) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("take lease %s: %w", name, err)
	}
	return true, nil
}

// ReleaseLease ends holder's lease name at now, so that the next taker
// need not wait for it to lapse; a lease someone else has is left alone.
func (s *DB) ReleaseLease(ctx context.Context, name, holder string, now time.Time) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.Table()),
		Key:                 leaseKey(name),
		UpdateExpression:    aws.String("SET lease_until = :now"),
		ConditionExpression: aws.String("holder = :h"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":h":   &types.AttributeValueMemberS{Value: holder},
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
		},
	})
	var other *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &other) {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}
