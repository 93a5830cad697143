// Package accountsdb keeps the workspaces' accounts in the service's table:
// a workspace's item (WS#<id> / WS: its record, API access, limits, credit
// limit, balance and compute units), its payments (WS#<id> /
// PAYMENT#<payment id>) with their top-ups' ledger entries, and the
// plans' list. Its API tokens are package tokensdb's. The job's
// transactions (package store) move the balance and the slot counters on
// the same item and write the ledger entries of reservations and
// settlements; package ledgerdb reads and audits the ledger, package
// slotsdb the counters.
package accountsdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
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

// Workspace reads a workspace. A missing one is auth.ErrNotFound, as an
// auth.Directory answers (tokensdb.Directory).
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
