// Package tokensdb keeps the workspaces' API tokens in the service's
// table: each token stored twice, written together, under its hash
// (TOKEN#<sha256> / TOKEN: authentication) and under its workspace
// (WS#<id> / TOKEN#<token id>: the tokens page, revocation by id, the
// last use). This package alone reads and writes them.
package tokensdb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/auth"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
)

// DB is the store with the API tokens besides.
type DB struct {
	*store.Store
}

// New returns the tokens on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// Directory is the table as an auth.Directory: tokens by hash from here,
// workspaces from accountsdb. It does no I/O.
func Directory(st *store.Store) auth.Directory { return directory{New(st), accountsdb.New(st)} }

type directory struct {
	tokens     *DB
	workspaces *accountsdb.DB
}

func (d directory) TokenByHash(ctx context.Context, hash string) (auth.Token, error) {
	return d.tokens.TokenByHash(ctx, hash)
}

func (d directory) Workspace(ctx context.Context, id string) (auth.Workspace, error) {
	return d.workspaces.Workspace(ctx, id)
}

type tokenItem struct {
	PK, SK      string
	TokenID     string `dynamodbav:"token_id"`
	WorkspaceID string `dynamodbav:"workspace_id"`
	Name        string `dynamodbav:"name"`
	Hash        string `dynamodbav:"token_sha256"`
	Prefix      string `dynamodbav:"prefix,omitempty"`
	CreatedAt   string `dynamodbav:"created_at"`
	CreatedBy   string `dynamodbav:"created_by,omitempty"`
	RevokedAt   string `dynamodbav:"revoked_at,omitempty"`
	LastUsedAt  string `dynamodbav:"last_used_at,omitempty"`
}

func tokenPK(hash string) string { return "TOKEN#" + hash }

// CreateToken stores a token's hash twice in one transaction: under the hash
// for authentication, and under the workspace for revocation by id. The
// workspace must exist.
func (s *DB) CreateToken(ctx context.Context, t auth.Token) error {
	byHash := tokenItem{PK: tokenPK(t.Hash), SK: "TOKEN", TokenID: t.ID, WorkspaceID: t.WorkspaceID,
		Name: t.Name, Hash: t.Hash, Prefix: t.Prefix, CreatedAt: store.Stamp(t.CreatedAt), CreatedBy: t.CreatedBy}
	byID := byHash
	byID.PK, byID.SK = store.WorkspacePK(t.WorkspaceID), "TOKEN#"+t.ID
	a, err := attributevalue.MarshalMap(byHash)
	if err != nil {
		return err
	}
	b, err := attributevalue.MarshalMap(byID)
	if err != nil {
		return err
	}
	_, err = s.Client().TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table()), Key: store.Key(store.WorkspacePK(t.WorkspaceID), "WS"),
			ConditionExpression: aws.String("attribute_exists(PK)")}},
		{Put: &types.Put{TableName: aws.String(s.Table()), Item: a, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: &types.Put{TableName: aws.String(s.Table()), Item: b, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
	}})
	if reason := store.CancelReason(err, 0); reason == "ConditionalCheckFailed" {
		return store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	return nil
}

// TokenByHash reads the token with this hash; a missing one is auth.ErrNotFound.
func (s *DB) TokenByHash(ctx context.Context, hash string) (auth.Token, error) {
	var it tokenItem
	if err := s.Get(ctx, tokenPK(hash), "TOKEN", &it); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return auth.Token{}, auth.ErrNotFound
		}
		return auth.Token{}, err
	}
	return it.token(), nil
}

func (it tokenItem) token() auth.Token {
	created, _ := job.ParseTime(it.CreatedAt)
	t := auth.Token{ID: it.TokenID, WorkspaceID: it.WorkspaceID, Name: it.Name, Hash: it.Hash, Prefix: it.Prefix, CreatedAt: created.Time, CreatedBy: it.CreatedBy}
	if it.RevokedAt != "" {
		r, _ := job.ParseTime(it.RevokedAt)
		t.RevokedAt = &r.Time
	}
	if it.LastUsedAt != "" {
		u, _ := job.ParseTime(it.LastUsedAt)
		t.LastUsedAt = &u.Time
	}
	return t
}

// RevokeToken marks a workspace's token revoked in both its items. Revoking a
// revoked token keeps the first revocation time.
func (s *DB) RevokeToken(ctx context.Context, ws, tokenID string, at time.Time) error {
	var it tokenItem
	if err := s.Get(ctx, store.WorkspacePK(ws), "TOKEN#"+tokenID, &it); err != nil {
		return fmt.Errorf("revoke token %s: %w", tokenID, err)
	}
	if it.RevokedAt != "" {
		return nil
	}
	update := func(pk, sk string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(s.Table()), Key: store.Key(pk, sk),
			UpdateExpression:          aws.String("SET revoked_at = if_not_exists(revoked_at, :at)"),
			ConditionExpression:       aws.String("attribute_exists(PK)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":at": store.String(store.Stamp(at))},
		}}
	}
	_, err := s.Client().TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		update(tokenPK(it.Hash), "TOKEN"), update(store.WorkspacePK(ws), "TOKEN#"+tokenID),
	}})
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", tokenID, err)
	}
	return nil
}

// RecordTokenUse writes the hour of at as the token's last use, on the
// item under its workspace, unless that hour (or a later one) is recorded
// already: a conditional update, so that however many function instances
// race, the item is written at most once an hour. written is false when the
// condition held it back, or the token is gone.
func (s *DB) RecordTokenUse(ctx context.Context, ws, tokenID string, at time.Time) (written bool, err error) {
	hour := store.Stamp(at.UTC().Truncate(time.Hour))
	_, err = s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.WorkspacePK(ws), "TOKEN#"+tokenID),
		UpdateExpression:          aws.String("SET last_used_at = :hour"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND (attribute_not_exists(last_used_at) OR last_used_at < :hour)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":hour": store.String(hour)},
	})
	if store.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record use of token %s: %w", tokenID, err)
	}
	return true, nil
}

// Tokens lists a workspace's tokens, revoked ones included, newest first,
// with their last use (the items under the workspace; no hash).
func (s *DB) Tokens(ctx context.Context, ws string) ([]auth.Token, error) {
	var out []auth.Token
	err := s.QueryPrefix(ctx, store.WorkspacePK(ws), "TOKEN#", func(item map[string]types.AttributeValue) error {
		var it tokenItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return err
		}
		t := it.token()
		t.WorkspaceID, t.Hash = ws, ""
		out = append(out, t)
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, err
}
