package sessionsdb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/member"
	"genjobs/internal/store"
)

// A person's sessions are listed under the person (USER#<user> /
// SESSION#<hash>), so that a password change can end all but the current
// one. The entry holds nothing else and goes with the table's TTL when the
// session could last no longer (7 days after sign-in).
type userSessionItem struct {
	PK, SK    string
	ExpiresAt int64 `dynamodbav:"expires_at"`
}

const sessionPrefix = "SESSION#"

// putUserSession writes the entry; a put of the same item again (a retry
// whose first answer was lost) is the same write.
func (d *DB) putUserSession(ctx context.Context, ses member.Session) error {
	item, err := attributevalue.MarshalMap(userSessionItem{PK: store.UserPK(ses.UserID), SK: sessionPrefix + ses.Hash,
		ExpiresAt: ses.CreatedAt.Add(member.MaxAge).Unix()})
	if err != nil {
		return err
	}
	if _, err := d.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.Table()), Item: item}); err != nil {
		return fmt.Errorf("list the session under its person: %w", err)
	}
	return nil
}

// EndOtherSessions ends every session of user but keep's (a password
// change): each session item and its entry are deleted. Deleting what is
// already gone is not an error, so a retry finishes what an interrupted
// call began. It returns how many sessions it ended.
func (d *DB) EndOtherSessions(ctx context.Context, user, keep string) (int, error) {
	var hashes []string
	err := d.QueryPrefix(ctx, store.UserPK(user), sessionPrefix, func(item map[string]types.AttributeValue) error {
		var it userSessionItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return err
		}
		if h := strings.TrimPrefix(it.SK, sessionPrefix); h != keep {
			hashes = append(hashes, h)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, h := range hashes {
		if err := d.DeleteSession(ctx, h); err != nil {
			return 0, err
		}
		if _, err := d.Client().DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.Table()),
			Key: store.Key(store.UserPK(user), sessionPrefix+h)}); err != nil {
			return 0, fmt.Errorf("delete a session's entry: %w", err)
		}
	}
	return len(hashes), nil
}

// MarkSessionChecked records that the session's person was found in good
// standing at at. The write sets a value, so its retry after a lost answer
// writes the same; a session deleted meanwhile (signed out, or ended by a
// password change) stays deleted: member.ErrSessionEnded.
func (d *DB) MarkSessionChecked(ctx context.Context, hash string, at time.Time) error {
	return d.setSession(ctx, hash, "checked_at", store.Stamp(at))
}

// SetSessionRefresh replaces the session's sealed refresh token (empty:
// none), as MarkSessionChecked writes.
func (d *DB) SetSessionRefresh(ctx context.Context, hash, sealed string) error {
	return d.setSession(ctx, hash, "refresh", sealed)
}

func (d *DB) setSession(ctx context.Context, hash, name, value string) error {
	_, err := d.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.Table()),
		Key:                       store.Key(sessionPK(hash), "SESSION"),
		UpdateExpression:          aws.String("SET #a = :v"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  map[string]string{"#a": name},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": store.String(value)},
	})
	if store.ConditionFailed(err) {
		return member.ErrSessionEnded
	}
	if err != nil {
		return fmt.Errorf("update session %s: %w", name, err)
	}
	return nil
}
