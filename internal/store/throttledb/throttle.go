// Package throttledb keeps the sign-in throttle's counters in the
// service's table.
package throttledb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/store"
)

// DB is the store with the sign-in throttle's counters besides.
type DB struct {
	*store.Store
}

// New returns the throttle's counters on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// The sign-in throttle's counters (console's throttle.go): one item per key
// and window, THROTTLE#<sha256 of the key> / WINDOW#<the window's start,
// Unix seconds>, whose failures grow by an atomic ADD. The key (an address
// or a source IP with its scope) is stored only hashed; the table's TTL
// (expires_at) removes a window once it has passed.
type failureItem struct {
	Failures int `dynamodbav:"failures"`
}

func failureKey(key string, window time.Time) (pk, sk string) {
	sum := sha256.Sum256([]byte(key))
	return "THROTTLE#" + hex.EncodeToString(sum[:16]), "WINDOW#" + strconv.FormatInt(window.Unix(), 10)
}

// Failures is the largest count of failures among keys' counters of the
// window starting at window.
func (d *DB) Failures(ctx context.Context, keys []string, window time.Time) (int, error) {
	most := 0
	for _, k := range keys {
		pk, sk := failureKey(k, window)
		var it failureItem
		err := d.Get(ctx, pk, sk, &it)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read the sign-in throttle: %w", err)
		}
		most = max(most, it.Failures)
	}
	return most, nil
}

// AddFailure counts one failure for key in the window starting at window,
// its counter kept until expires. The ADD is atomic: failures counted at
// once by several instances are all counted. (A retry whose first answer
// was lost may count one failure twice: the throttle errs towards
// caution.)
func (d *DB) AddFailure(ctx context.Context, key string, window, expires time.Time) error {
	pk, sk := failureKey(key, window)
	_, err := d.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(d.Table()),
		Key:              store.Key(pk, sk),
		UpdateExpression: aws.String("ADD failures :one SET expires_at = if_not_exists(expires_at, :exp)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": store.Number(1), ":exp": store.Number(expires.Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("count a failure: %w", err)
	}
	return nil
}
