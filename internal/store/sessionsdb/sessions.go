// Package sessionsdb keeps the console's sign-in sessions in the service's
// table: the session items, each person's list of them (for ending all but
// one at a password change) and the values a session shows once.
package sessionsdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store"
)

// DB is the store with the sign-in sessions besides.
type DB struct {
	*store.Store
}

// New returns the sessions on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// A console session is SESSION#<sha256 of the cookie> / SESSION; the
// table's TTL (expires_at) removes it once it has ended, and reads check
// the end themselves, since TTL deletes late.
type sessionItem struct {
	PK, SK      string
	UserID      string `dynamodbav:"user_id"`
	Email       string `dynamodbav:"email"`
	WorkspaceID string `dynamodbav:"workspace_id"`
	CSRF        string `dynamodbav:"csrf"`
	CreatedAt   string `dynamodbav:"created_at"`
	SeenAt      string `dynamodbav:"seen_at"`
	Refresh     string `dynamodbav:"refresh,omitempty"` // sealed (member.SealRefresh)
	CheckedAt   string `dynamodbav:"checked_at,omitempty"`
	ExpiresAt   int64  `dynamodbav:"expires_at"`
}

func sessionPK(hash string) string { return "SESSION#" + hash }

// CreateSession stores a new session, and its entry in the person's list
// of sessions (userSessionItem) first: an entry whose session was never
// written only costs EndOtherSessions a delete of nothing.
func (d *DB) CreateSession(ctx context.Context, ses member.Session) error {
	if err := d.putUserSession(ctx, ses); err != nil {
		return err
	}
	it := sessionItem{PK: sessionPK(ses.Hash), SK: "SESSION", UserID: ses.UserID, Email: ses.Email,
		WorkspaceID: ses.WorkspaceID, CSRF: ses.CSRF, CreatedAt: store.Stamp(ses.CreatedAt), SeenAt: store.Stamp(ses.SeenAt),
		Refresh: ses.Refresh, ExpiresAt: ses.Ends().Unix()}
	if !ses.CheckedAt.IsZero() { // else read as checked at its creation
		it.CheckedAt = store.Stamp(ses.CheckedAt)
	}
	return d.PutNew(ctx, it)
}

// Session reads the session whose cookie hashes to hash, if it is still
// valid at now.
func (d *DB) Session(ctx context.Context, hash string, now time.Time) (member.Session, error) {
	var it sessionItem
	if err := d.Get(ctx, sessionPK(hash), "SESSION", &it); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return member.Session{}, member.ErrSessionEnded
		}
		return member.Session{}, err
	}
	created, _ := job.ParseTime(it.CreatedAt)
	seen, _ := job.ParseTime(it.SeenAt)
	ses := member.Session{Hash: hash, UserID: it.UserID, Email: it.Email, WorkspaceID: it.WorkspaceID, CSRF: it.CSRF,
		CreatedAt: created.Time, SeenAt: seen.Time, Refresh: it.Refresh, CheckedAt: created.Time}
	if checked, err := job.ParseTime(it.CheckedAt); err == nil && it.CheckedAt != "" {
		ses.CheckedAt = checked.Time
	}
	if !ses.Valid(now) {
		return member.Session{}, member.ErrSessionEnded
	}
	return ses, nil
}

// UpdateSession records a session's use at ses.SeenAt and its chosen
// workspace. A session deleted meanwhile (signed out) stays deleted:
// member.ErrSessionEnded.
func (d *DB) UpdateSession(ctx context.Context, ses member.Session) error {
	_, err := d.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(d.Table()),
		Key:                 store.Key(sessionPK(ses.Hash), "SESSION"),
		UpdateExpression:    aws.String("SET seen_at = :seen, expires_at = :exp, workspace_id = :ws"),
		ConditionExpression: aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":seen": store.String(store.Stamp(ses.SeenAt)), ":exp": store.Number(ses.Ends().Unix()), ":ws": store.String(ses.WorkspaceID),
		},
	})
	if store.ConditionFailed(err) {
		return member.ErrSessionEnded
	}
	if err != nil {
		return fmt.Errorf("update session: %w", err)
	}
	return nil
}

// DeleteSession ends a session at once (sign-out). Deleting one that is
// gone is not an error.
func (d *DB) DeleteSession(ctx context.Context, hash string) error {
	_, err := d.Client().DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.Table()), Key: store.Key(sessionPK(hash), "SESSION")})
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}
