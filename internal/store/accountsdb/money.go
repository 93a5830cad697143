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

	"genjobs/internal/billing"
	"genjobs/internal/store"
)

// ErrPaymentConflict is returned when a payment id is used again with
// another amount.
var ErrPaymentConflict = errors.New("store: payment id already used with another amount")

// TopUp adds a payment to a workspace's available balance, once per payment
// id: a repeated call with the same id and amount changes nothing.
func (s *DB) TopUp(ctx context.Context, ws, paymentID string, amount billing.Micros, at time.Time) (billing.Balance, error) {
	if _, err := s.TopUpWith(ctx, ws, paymentID, amount, at); err != nil {
		return billing.Balance{}, err
	}
	return s.Balance(ctx, ws)
}

// TopUpWith credits amount to ws once per paymentID, with extra written in
// the same transaction (topupsdb marks its top-up paid so). credited is
// false when the payment was credited before (with the same amount; another
// amount is ErrPaymentConflict), in which case extra was not written
// either. Item 3 of a cancelled transaction is extra's first.
func (s *DB) TopUpWith(ctx context.Context, ws, paymentID string, amount billing.Micros, at time.Time, extra ...types.TransactWriteItem) (credited bool, err error) {
	return s.credit(ctx, ws, paymentID, amount, 0, at, extra)
}

// PackWith credits a pack of compute units bought for paid USD to ws, once
// per paymentID, as TopUpWith credits USD: the pack's units to
// cu_available, with a top-up entry in units, and the payment recorded with
// both figures (either differing on a second call is ErrPaymentConflict).
// The API balance does not move.
func (s *DB) PackWith(ctx context.Context, ws, paymentID string, paid billing.Micros, units billing.Units, at time.Time, extra ...types.TransactWriteItem) (credited bool, err error) {
	if units <= 0 {
		return false, fmt.Errorf("credit pack to %s: %s units is not a pack", ws, units)
	}
	return s.credit(ctx, ws, paymentID, paid, units, at, extra)
}

// paymentItem is a payment credited to a workspace (WS#<ws> /
// PAYMENT#<payment id>): put once, in its credit's transaction, so that a
// payment id credits once; a pack's records its units besides.
type paymentItem struct {
	PK, SK    string
	PaymentID string `dynamodbav:"payment_id"`
	Amount    int64  `dynamodbav:"amount_micros"`
	Units     int64  `dynamodbav:"units,omitempty"`
	CreatedAt string `dynamodbav:"created_at"`
}

// credit is TopUpWith (units 0: amount to the API balance) and PackWith
// (units to the compute units, amount recorded as paid).
func (s *DB) credit(ctx context.Context, ws, paymentID string, amount billing.Micros, units billing.Units, at time.Time, extra []types.TransactWriteItem) (credited bool, err error) {
	record := paymentItem{PK: store.WorkspacePK(ws), SK: "PAYMENT#" + paymentID,
		PaymentID: paymentID, Amount: int64(amount), CreatedAt: store.Stamp(at)}
	entry := billing.Entry{Kind: billing.TopUp, Amount: amount, At: at, PaymentID: paymentID}
	move, value := "ADD available_micros :amount", store.Number(amount)
	if units > 0 {
		record.Units = int64(units)
		entry = billing.Entry{Kind: billing.TopUp, Currency: billing.CurrencyCU, Units: units, At: at, PaymentID: paymentID}
		move, value = "ADD cu_available :amount", store.Number(int64(units))
	}
	payment, err := attributevalue.MarshalMap(record)
	if err != nil {
		return false, err
	}
	ledger, err := store.LedgerPut(s.Table(), ws, entry)
	if err != nil {
		return false, err
	}
	err = s.Transact(ctx, append([]types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(s.Table()), Key: store.Key(store.WorkspacePK(ws), "WS"),
			UpdateExpression:          aws.String(move),
			ConditionExpression:       aws.String("attribute_exists(PK)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":amount": value},
		}},
		{Put: &types.Put{TableName: aws.String(s.Table()), Item: payment, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: ledger},
	}, extra...))
	switch {
	case store.CancelReason(err, 0) == "ConditionalCheckFailed":
		return false, store.ErrNotFound
	case store.CancelReason(err, 1) == "ConditionalCheckFailed":
		// Credited before: by this payment's own earlier try (its answer
		// lost), or by a concurrent delivery of the same event.
		var prior paymentItem
		if err := s.Get(ctx, store.WorkspacePK(ws), "PAYMENT#"+paymentID, &prior); err != nil {
			return false, err
		}
		if billing.Micros(prior.Amount) != amount || billing.Units(prior.Units) != units {
			return false, ErrPaymentConflict
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("top up %s: %w", ws, err)
	}
	return true, nil
}

// Balance reads a workspace's balance.
func (s *DB) Balance(ctx context.Context, ws string) (billing.Balance, error) {
	var it store.WorkspaceItem
	if err := s.Get(ctx, store.WorkspacePK(ws), "WS", &it); err != nil {
		return billing.Balance{}, err
	}
	return it.Balance(), nil
}

// Workspaces lists every workspace id. It scans the table: an operator's
// audit (`ledger verify --all`), never a request path.
func (s *DB) Workspaces(ctx context.Context) ([]string, error) {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.Table()),
		FilterExpression:          aws.String("SK = :ws"),
		ProjectionExpression:      aws.String("workspace_id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":ws": store.String("WS")},
	}
	var ids []string
	for {
		out, err := s.Client().Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list workspaces: %w", err)
		}
		for _, item := range out.Items {
			var it store.WorkspaceItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return nil, err
			}
			ids = append(ids, it.WorkspaceID)
		}
		if out.LastEvaluatedKey == nil {
			return ids, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// SetCreditLimit puts a workspace on Net 30 terms with this credit limit
// (zero takes it off). Jobs in flight are not affected; a limit below what
// is owed only stops new jobs until it is paid.
func (s *DB) SetCreditLimit(ctx context.Context, ws string, limit billing.Micros) (billing.Balance, error) {
	out, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.WorkspacePK(ws), "WS"),
		UpdateExpression:          aws.String("SET credit_limit_micros = :limit"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":limit": store.Number(int64(limit))},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if store.ConditionFailed(err) {
		return billing.Balance{}, store.ErrNotFound
	}
	if err != nil {
		return billing.Balance{}, fmt.Errorf("set credit limit of %s: %w", ws, err)
	}
	var it store.WorkspaceItem
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return billing.Balance{}, err
	}
	return it.Balance(), nil
}
