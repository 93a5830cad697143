package store

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
	"genjobs/internal/billing"
	"genjobs/internal/job"
)

// workspaceItem holds a workspace, its limits and its balance, so that a
// reservation and a concurrency slot can be taken in one conditional write.
type workspaceItem struct {
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
func stamp(t time.Time) string   { return job.TimeOf(t).String() }

// CreateWorkspace stores a new workspace with an empty balance and no jobs.
// Zero limits take the defaults (docs/api.md, "Limits").
func (s *Store) CreateWorkspace(ctx context.Context, w auth.Workspace) error {
	if w.MaxConcurrent == 0 {
		w.MaxConcurrent = auth.DefaultMaxConcurrent
	}
	if w.MaxRunning == 0 {
		w.MaxRunning = auth.DefaultMaxRunning
	}
	err := s.PutNew(ctx, workspaceItem{
		PK: WorkspacePK(w.ID), SK: "WS", WorkspaceID: w.ID, Name: w.Name,
		APIEnabled: w.APIEnabled, MaxConcurrent: w.MaxConcurrent, MaxRunning: w.MaxRunning,
		CreatedAt: stamp(w.CreatedAt),
	})
	if err != nil {
		return fmt.Errorf("create workspace %s: %w", w.ID, err)
	}
	return nil
}

// Workspace reads a workspace. A missing one is auth.ErrNotFound, so that
// Store is an auth.Directory.
func (s *Store) Workspace(ctx context.Context, id string) (auth.Workspace, error) {
	var it workspaceItem
	if err := s.Get(ctx, WorkspacePK(id), "WS", &it); err != nil {
		if errors.Is(err, ErrNotFound) {
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
func (s *Store) SetAPIEnabled(ctx context.Context, id string, enabled bool) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       Key(WorkspacePK(id), "WS"),
		UpdateExpression:          aws.String("SET api_enabled = :on"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":on": &types.AttributeValueMemberBOOL{Value: enabled}},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return ErrNotFound
	}
	return err
}

// CreateToken stores a token's hash twice in one transaction: under the hash
// for authentication, and under the workspace for revocation by id. The
// workspace must exist.
func (s *Store) CreateToken(ctx context.Context, t auth.Token) error {
	byHash := tokenItem{PK: tokenPK(t.Hash), SK: "TOKEN", TokenID: t.ID, WorkspaceID: t.WorkspaceID,
		Name: t.Name, Hash: t.Hash, Prefix: t.Prefix, CreatedAt: stamp(t.CreatedAt), CreatedBy: t.CreatedBy}
	byID := byHash
	byID.PK, byID.SK = WorkspacePK(t.WorkspaceID), "TOKEN#"+t.ID
	a, err := attributevalue.MarshalMap(byHash)
	if err != nil {
		return err
	}
	b, err := attributevalue.MarshalMap(byID)
	if err != nil {
		return err
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.table), Key: Key(WorkspacePK(t.WorkspaceID), "WS"),
			ConditionExpression: aws.String("attribute_exists(PK)")}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: a, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: b, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
	}})
	if reason := cancelReason(err, 0); reason == "ConditionalCheckFailed" {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	return nil
}

// TokenByHash reads the token with this hash; a missing one is auth.ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash string) (auth.Token, error) {
	var it tokenItem
	if err := s.Get(ctx, tokenPK(hash), "TOKEN", &it); err != nil {
		if errors.Is(err, ErrNotFound) {
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
func (s *Store) RevokeToken(ctx context.Context, ws, tokenID string, at time.Time) error {
	var it tokenItem
	if err := s.Get(ctx, WorkspacePK(ws), "TOKEN#"+tokenID, &it); err != nil {
		return fmt.Errorf("revoke token %s: %w", tokenID, err)
	}
	if it.RevokedAt != "" {
		return nil
	}
	update := func(pk, sk string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(s.table), Key: Key(pk, sk),
			UpdateExpression:          aws.String("SET revoked_at = if_not_exists(revoked_at, :at)"),
			ConditionExpression:       aws.String("attribute_exists(PK)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":at": str(stamp(at))},
		}}
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		update(tokenPK(it.Hash), "TOKEN"), update(WorkspacePK(ws), "TOKEN#"+tokenID),
	}})
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", tokenID, err)
	}
	return nil
}

// ErrPaymentConflict is returned when a payment id is used again with
// another amount.
var ErrPaymentConflict = errors.New("store: payment id already used with another amount")

// TopUp adds a payment to a workspace's available balance, once per payment
// id: a repeated call with the same id and amount changes nothing.
func (s *Store) TopUp(ctx context.Context, ws, paymentID string, amount billing.Micros, at time.Time) (billing.Balance, error) {
	if _, err := s.TopUpWith(ctx, ws, paymentID, amount, at); err != nil {
		return billing.Balance{}, err
	}
	return s.Balance(ctx, ws)
}

// TopUpWith credits amount to ws once per paymentID, with extra written in
// the same transaction (consoledb marks its top-up paid so). credited is
// false when the payment was credited before (with the same amount; another
// amount is ErrPaymentConflict), in which case extra was not written
// either. Item 3 of a cancelled transaction is extra's first.
func (s *Store) TopUpWith(ctx context.Context, ws, paymentID string, amount billing.Micros, at time.Time, extra ...types.TransactWriteItem) (credited bool, err error) {
	payment, err := attributevalue.MarshalMap(map[string]any{
		"PK": WorkspacePK(ws), "SK": "PAYMENT#" + paymentID,
		"payment_id": paymentID, "amount_micros": int64(amount), "created_at": stamp(at),
	})
	if err != nil {
		return false, err
	}
	ledger, err := ledgerPut(s.table, ws, billing.Entry{Kind: billing.TopUp, Amount: amount, At: at, PaymentID: paymentID})
	if err != nil {
		return false, err
	}
	err = s.transact(ctx, append([]types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: Key(WorkspacePK(ws), "WS"),
			UpdateExpression:          aws.String("ADD available_micros :amount"),
			ConditionExpression:       aws.String("attribute_exists(PK)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":amount": num64i(int64(amount))},
		}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: payment, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: ledger},
	}, extra...))
	switch {
	case cancelReason(err, 0) == "ConditionalCheckFailed":
		return false, ErrNotFound
	case cancelReason(err, 1) == "ConditionalCheckFailed":
		var prior struct {
			Amount int64 `dynamodbav:"amount_micros"`
		}
		if err := s.Get(ctx, WorkspacePK(ws), "PAYMENT#"+paymentID, &prior); err != nil {
			return false, err
		}
		if billing.Micros(prior.Amount) != amount {
			return false, ErrPaymentConflict
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("top up %s: %w", ws, err)
	}
	return true, nil
}

// Balance reads a workspace's balance.
func (s *Store) Balance(ctx context.Context, ws string) (billing.Balance, error) {
	var it workspaceItem
	if err := s.Get(ctx, WorkspacePK(ws), "WS", &it); err != nil {
		return billing.Balance{}, err
	}
	return it.balance(), nil
}

func (it workspaceItem) balance() billing.Balance {
	return billing.Balance{
		Available: billing.Micros(it.Available), Reserved: billing.Micros(it.Reserved),
		Spent: billing.Micros(it.Spent), CreditLimit: billing.Micros(it.CreditLimit),
	}
}

func isConditionFailed(err error) bool { return ConditionFailed(err) }

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
