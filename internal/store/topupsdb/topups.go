// Package topupsdb keeps the top-ups by checkout in the service's table:
// pending, then paid, failed, cancelled or expired. The money moves
// through the accounts (accountsdb.DB.TopUpWith, PackWith), in the same
// transaction as a top-up turns paid.
package topupsdb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
)

// DB is the store with the top-ups by checkout besides.
type DB struct {
	*store.Store
}

// New returns the top-ups on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// A top-up by checkout is WS#<ws> / TOPUP#<id>: a top-up of the API
// balance, or a pack of compute units (pack_units), pending when the owner
// asks for it, then paid, failed or expired by the payment provider's
// webhook, failed or cancelled by the console, expired by the sweeper. The
// money itself moves only through accountsdb.DB.TopUpWith (a pack's units
// through PackWith), keyed on the checkout session, in the same
// transaction as the item turns paid.
//
// While pending, the item is in the deliveries-due index too (the sparse
// index of things due at a time, beside the webhook deliveries' DUE#
// partitions), in the one partition pendingPK sorted by creation, so that
// the sweeper finds the stale ones with one Query; leaving pending removes
// it. Top-ups are made by people, a few a minute at most: one partition
// takes them.
type checkoutItem struct {
	PK, SK      string
	TopUpID     string `dynamodbav:"topup_id"`
	WorkspaceID string `dynamodbav:"workspace_id"`
	Status      string `dynamodbav:"status"`
	Requested   int64  `dynamodbav:"requested_micros"`
	Credited    int64  `dynamodbav:"credited_micros"`
	PackUnits   int64  `dynamodbav:"pack_units,omitempty"`
	SessionID   string `dynamodbav:"session_id,omitempty"`
	CreatedBy   string `dynamodbav:"created_by"`
	CreatedAt   string `dynamodbav:"created_at"`
	UpdatedAt   string `dynamodbav:"updated_at"`
	// The deliveries-due index's keys, while pending.
	GSI4PK string `dynamodbav:"GSI4PK,omitempty"`
	GSI4SK string `dynamodbav:"GSI4SK,omitempty"`
}

const checkoutPrefix = "TOPUP#"

// pendingPK is the index partition of pending top-ups; their sort key is
// the creation's stamp, the workspace and the id.
const pendingPK = "TOPUPS#PENDING"

func pendingSK(c billing.Checkout) string {
	return store.Stamp(c.CreatedAt) + "#" + c.WorkspaceID + "#" + c.ID
}

func (it checkoutItem) checkout() billing.Checkout {
	created, _ := job.ParseTime(it.CreatedAt)
	updated, _ := job.ParseTime(it.UpdatedAt)
	return billing.Checkout{ID: it.TopUpID, WorkspaceID: it.WorkspaceID, Status: billing.CheckoutStatus(it.Status),
		Requested: billing.Micros(it.Requested), Credited: billing.Micros(it.Credited), Units: billing.Units(it.PackUnits), SessionID: it.SessionID,
		CreatedBy: it.CreatedBy, CreatedAt: created.Time, UpdatedAt: updated.Time}
}

// CreateCheckout records a pending top-up. The workspace must exist.
func (d *DB) CreateCheckout(ctx context.Context, c billing.Checkout) error {
	item, err := attributevalue.MarshalMap(checkoutItem{PK: store.WorkspacePK(c.WorkspaceID), SK: checkoutPrefix + c.ID,
		TopUpID: c.ID, WorkspaceID: c.WorkspaceID, Status: string(billing.CheckoutPending), Requested: int64(c.Requested), PackUnits: int64(c.Units),
		CreatedBy: c.CreatedBy, CreatedAt: store.Stamp(c.CreatedAt), UpdatedAt: store.Stamp(c.CreatedAt),
		GSI4PK: pendingPK, GSI4SK: pendingSK(c)})
	if err != nil {
		return err
	}
	err = d.Transact(ctx, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(d.Table()), Key: store.Key(store.WorkspacePK(c.WorkspaceID), "WS"),
			ConditionExpression: aws.String("attribute_exists(PK)")}},
		{Put: &types.Put{TableName: aws.String(d.Table()), Item: item, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
	})
	switch {
	case store.CancelReason(err, 0) == "ConditionalCheckFailed":
		return store.ErrNotFound
	case store.CancelReason(err, 1) == "ConditionalCheckFailed":
		return store.ErrExists
	case err != nil:
		return fmt.Errorf("create top-up: %w", err)
	}
	return nil
}

// SetCheckoutSession records the checkout session made for a pending top-up.
func (d *DB) SetCheckoutSession(ctx context.Context, ws, id, sessionID string, at time.Time) error {
	_, err := d.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(d.Table()),
		Key:                 store.Key(store.WorkspacePK(ws), checkoutPrefix+id),
		UpdateExpression:    aws.String("SET session_id = if_not_exists(session_id, :sid), updated_at = :at"),
		ConditionExpression: aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":sid": store.String(sessionID), ":at": store.String(store.Stamp(at)),
		},
	})
	if store.ConditionFailed(err) {
		return store.ErrNotFound
	}
	return err
}

// Checkout reads one top-up of a workspace.
func (d *DB) Checkout(ctx context.Context, ws, id string) (billing.Checkout, error) {
	var it checkoutItem
	if err := d.Get(ctx, store.WorkspacePK(ws), checkoutPrefix+id, &it); err != nil {
		return billing.Checkout{}, err
	}
	return it.checkout(), nil
}

// Checkouts lists a workspace's top-ups by checkout, newest first.
func (d *DB) Checkouts(ctx context.Context, ws string) ([]billing.Checkout, error) {
	var out []billing.Checkout
	err := d.EachCheckout(ctx, ws, func(c billing.Checkout) { out = append(out, c) })
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, err
}

// EachCheckout calls fn with each of a workspace's top-ups by checkout, in
// the order of their ids (one strongly consistent Query a page): the
// ledger's audit (ledgerdb.DB.AuditLedger) reads them so.
func (d *DB) EachCheckout(ctx context.Context, ws string, fn func(billing.Checkout)) error {
	return d.QueryPrefix(ctx, store.WorkspacePK(ws), checkoutPrefix, func(item map[string]types.AttributeValue) error {
		var it checkoutItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return err
		}
		fn(it.checkout())
		return nil
	})
}

// CreditCheckout credits a paid top-up and marks it paid, in one
// transaction keyed on the session (billing.PaymentID): amount, the
// checkout session's total, to the API balance, or for a pack (units > 0)
// its units to the compute units. However often, and however concurrently,
// the payment provider reports the session paid, it is credited once;
// credited is false when it had been already. The top-up must be what the
// caller read: an unknown one, another session's, or one whose pack is
// not units is ErrNotFound and credits nothing.
func (d *DB) CreditCheckout(ctx context.Context, ws, id, sessionID string, amount billing.Micros, units billing.Units, at time.Time) (credited bool, err error) {
	if amount <= 0 || units < 0 {
		return false, fmt.Errorf("credit top-up %s: amount %s or units %s is not positive", id, amount, units)
	}
	values := map[string]types.AttributeValue{":paid": store.String(string(billing.CheckoutPaid)), ":amount": store.Number(int64(amount)), ":sid": store.String(sessionID), ":at": store.String(store.Stamp(at))}
	pack := "attribute_not_exists(pack_units)"
	if units > 0 {
		pack, values[":units"] = "pack_units = :units", store.Number(int64(units))
	}
	mark := types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(d.Table()), Key: store.Key(store.WorkspacePK(ws), checkoutPrefix+id),
		UpdateExpression:          aws.String("SET #status = :paid, credited_micros = :amount, session_id = :sid, updated_at = :at REMOVE GSI4PK, GSI4SK"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND (attribute_not_exists(session_id) OR session_id = :sid) AND " + pack),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: values,
	}}
	if units > 0 {
		credited, err = accountsdb.New(d.Store).PackWith(ctx, ws, billing.PaymentID(sessionID), amount, units, at, mark)
	} else {
		credited, err = accountsdb.New(d.Store).TopUpWith(ctx, ws, billing.PaymentID(sessionID), amount, at, mark)
	}
	if store.CancelReason(err, 3) == "ConditionalCheckFailed" || errors.Is(err, store.ErrNotFound) {
		return false, store.ErrNotFound
	}
	return credited, err
}

// EndCheckout marks a pending top-up failed, expired or cancelled; one
// that is paid (or ended) already keeps its status. An unknown top-up is
// ErrNotFound. A retry whose first answer was lost meets its own write (the
// status and the time it wrote) and reports it changed.
func (d *DB) EndCheckout(ctx context.Context, ws, id string, status billing.CheckoutStatus, at time.Time) (changed bool, err error) {
	_, err = d.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.Table()),
		Key:                       store.Key(store.WorkspacePK(ws), checkoutPrefix+id),
		UpdateExpression:          aws.String("SET #status = :to, updated_at = :at REMOVE GSI4PK, GSI4SK"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND #status = :pending"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":to": store.String(string(status)), ":pending": store.String(string(billing.CheckoutPending)), ":at": store.String(store.Stamp(at))},
	})
	if store.ConditionFailed(err) {
		now, rerr := d.Checkout(ctx, ws, id)
		if rerr != nil {
			return false, rerr
		}
		return now.Status == status && store.Stamp(now.UpdatedAt) == store.Stamp(at), nil
	}
	if err != nil {
		return false, fmt.Errorf("end top-up %s: %w", id, err)
	}
	return true, nil
}

// EachStalePendingCheckout calls fn with the workspace and id of every
// top-up pending since before created, oldest first, from the index (which
// may lag: EndCheckout's condition is the check).
func (d *DB) EachStalePendingCheckout(ctx context.Context, created time.Time, fn func(ws, id string) error) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.Table()),
		IndexName:                 aws.String(store.IndexDeliveriesDue),
		KeyConditionExpression:    aws.String("GSI4PK = :pk AND GSI4SK < :before"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": store.String(pendingPK), ":before": store.String(store.Stamp(created))},
	}
	for {
		out, err := d.Client().Query(ctx, in)
		if err != nil {
			return fmt.Errorf("list pending top-ups: %w", err)
		}
		for _, item := range out.Items {
			var k checkoutItem // the index's keys: the item's own
			if err := attributevalue.UnmarshalMap(item, &k); err != nil {
				return err
			}
			ws, _ := strings.CutPrefix(k.PK, "WS#")
			id, _ := strings.CutPrefix(k.SK, checkoutPrefix)
			if err := fn(ws, id); err != nil {
				return err
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
