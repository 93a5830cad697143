// Package accountsdb keeps the workspaces' accounts in the service's table:
// a workspace's item (WS#<id> / WS: its record, API access, limits, credit
// limit and balance), its API tokens (TOKEN#<sha256> / TOKEN, and
// WS#<id> / TOKEN#<token id> for revocation by id), its payments
// (WS#<id> / PAYMENT#<payment id>) with their top-ups' ledger entries, and
// the ledger audit. The job's transactions (package store) move the
// balance and the slot counters on the same item and write the ledger
// entries of reservations and settlements; the ledger is read there too
// (store.Store.LedgerEntries).
package accountsdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/auth"
	"genjobs/internal/job"
	"genjobs/internal/store"
)

// DB is the store with the accounts besides.
type DB struct {
	*store.Store
}

// New returns the accounts on st's table. It does no I/O.
func New(st *store.Store) *DB {
	return &DB{Store: st}
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

// CreateWorkspace stores a new workspace with an empty balance and no jobs.
// Zero limits take the defaults (docs/api.md, "Limits").
func (s *DB) CreateWorkspace(ctx context.Context, w auth.Workspace) error {
	if w.MaxConcurrent == 0 {
		w.MaxConcurrent = auth.DefaultMaxConcurrent
	}
	if w.MaxRunning == 0 {
		w.MaxRunning = auth.DefaultMaxRunning
	}
	err := s.PutNew(ctx, store.WorkspaceItem{
		PK: store.WorkspacePK(w.ID), SK: "WS", WorkspaceID: w.ID, Name: w.Name,
		APIEnabled: w.APIEnabled, MaxConcurrent: w.MaxConcurrent, MaxRunning: w.MaxRunning,
		CreatedAt: store.Stamp(w.CreatedAt),
	})
	if err != nil {
		return fmt.Errorf("create workspace %s: %w", w.ID, err)
	}
	return nil
}

// Workspace reads a workspace. A missing one is auth.ErrNotFound, so that
// DB is an auth.Directory.
func (s *DB) Workspace(ctx context.Context, id string) (auth.Workspace, error) {
	var it store.WorkspaceItem
	if err := s.Get(ctx, store.WorkspacePK(id), "WS", &it); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return auth.Workspace{}, auth.ErrNotFound
		}
		return auth.Workspace{}, err
	}
	created, _ := job.ParseTime(it.CreatedAt)
	return auth.Workspace{
		ID: it.WorkspaceID, Name: it.Name, APIEnabled: it.APIEnabled,
		MaxConcurrent: it.MaxConcurrent, MaxRunning: it.MaxRunning, CreatedAt: created.Time,
	}, nil
}

// SetAPIEnabled switches API access of an existing workspace.
func (s *DB) SetAPIEnabled(ctx context.Context, id string, enabled bool) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.WorkspacePK(id), "WS"),
		UpdateExpression:          aws.String("SET api_enabled = :on"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":on": &types.AttributeValueMemberBOOL{Value: enabled}},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return store.ErrNotFound
	}
	return err
}

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
