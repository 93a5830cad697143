package sessionsdb

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
	"genjobs/internal/store"
)

// A value the console shows once (console.Console's holder: a new token's
// value, a temporary password) waits for its one display under the session
// that made it: SESSION#<sha256 of the cookie> / ONCE#<id>, sealed by the
// console with a key only the browser's cookie gives, for at most a minute.
// The table's TTL (expires_at) removes one nobody took; reads check the end
// themselves, since TTL deletes late.
func oncePK(session string) string { return sessionPK(session) }

func onceSK(id string) string { return "ONCE#" + id }

// HoldOnce stores sealed for session under id until expires, replacing what
// was there (so a retry whose first answer was lost writes the same).
func (d *DB) HoldOnce(ctx context.Context, session, id string, sealed []byte, expires time.Time) error {
	_, err := d.Client().PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(d.Table()),
		Item: map[string]types.AttributeValue{
			"PK": store.String(oncePK(session)), "SK": store.String(onceSK(id)),
			"sealed": &types.AttributeValueMemberB{Value: sealed}, "expires_at": store.Number(expires.Unix()),
			"expires": store.String(store.Stamp(expires)),
		},
	})
	if err != nil {
		return fmt.Errorf("hold a value shown once: %w", err)
	}
	return nil
}

// TakeOnce deletes and returns what session holds under id, in one call, so
// that two displays never both get it. It is store.ErrNotFound when nothing
// is held (already taken, never held, or removed by TTL) or what was held
// expired at or before now.
func (d *DB) TakeOnce(ctx context.Context, session, id string, now time.Time) ([]byte, error) {
	out, err := d.Client().DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(d.Table()),
		Key:          store.Key(oncePK(session), onceSK(id)),
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return nil, fmt.Errorf("take a value shown once: %w", err)
	}
	sealed, _ := out.Attributes["sealed"].(*types.AttributeValueMemberB)
	exp, _ := out.Attributes["expires"].(*types.AttributeValueMemberS)
	if sealed == nil || exp == nil {
		return nil, store.ErrNotFound
	}
	if t, err := job.ParseTime(exp.Value); err != nil || !now.Before(t.Time) {
		return nil, store.ErrNotFound
	}
	return sealed.Value, nil
}
