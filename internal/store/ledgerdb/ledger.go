// Package ledgerdb reads the workspaces' ledgers in the service's table
// and audits them: the entries (WS#<ws> / LEDGER#...), the charges of a
// date range that usage reports, in USD or compute units, and the ledger
// check of a workspace's balances, jobs and top-ups by checkout. The
// entries are only ever put in the transaction of the movement they
// record (package store: a job's reservation and settlement, the item's
// shape and key; package accountsdb: payments and plans' allowances), so
// this package writes nothing.
package ledgerdb

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/topupsdb"
)

// DB is the store with the ledger's reads besides.
type DB struct {
	*store.Store
}

// New returns the ledger on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// LedgerEntries returns every ledger entry of a workspace.
func (d *DB) LedgerEntries(ctx context.Context, ws string) ([]billing.Entry, error) {
	prefix := store.LedgerPrefix("", false)
	return d.ledger(ctx, ws, prefix, prefix+"\uffff")
}

// Charges returns the charges of a workspace made in [from, to]: what
// GET /usage reports.
func (d *DB) Charges(ctx context.Context, ws string, from, to time.Time) ([]billing.Entry, error) {
	prefix := store.LedgerPrefix(billing.Charge, false)
	return d.ledger(ctx, ws, prefix+store.Stamp(from), prefix+store.Stamp(to)+"#\uffff")
}

// UnitCharges returns the charges in compute units of a workspace made in
// [from, to] (LEDGER#cu#charge#...): the application's usage, each with
// the person who made its job.
func (d *DB) UnitCharges(ctx context.Context, ws string, from, to time.Time) ([]billing.Entry, error) {
	prefix := store.LedgerPrefix(billing.Charge, true)
	return d.ledger(ctx, ws, prefix+store.Stamp(from), prefix+store.Stamp(to)+"#\uffff")
}

func (d *DB) ledger(ctx context.Context, ws, lo, hi string) ([]billing.Entry, error) {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(d.Table()),
		KeyConditionExpression: aws.String("PK = :pk AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": store.String(store.WorkspacePK(ws)), ":lo": store.String(lo), ":hi": store.String(hi),
		},
		ConsistentRead: aws.Bool(true),
	}
	var entries []billing.Entry
	for {
		out, err := d.Client().Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("ledger of %s: %w", ws, err)
		}
		for _, item := range out.Items {
			e, err := store.LedgerEntry(item)
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
		if out.LastEvaluatedKey == nil {
			return entries, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// JobOutcomes maps every job of a workspace to the settlement its status
// calls for, from the jobs-by-workspace index: eventually consistent, so an
// audit is exact when the workspace is quiet.
func (d *DB) JobOutcomes(ctx context.Context, ws string) (map[string]billing.Outcome, error) {
	outcomes := map[string]billing.Outcome{}
	err := d.EachJobStatus(ctx, ws, func(id string, st job.Status) {
		switch {
		case st == job.Completed:
			outcomes[id] = billing.Charged
		case st.Terminal():
			outcomes[id] = billing.Released
		default:
			outcomes[id] = billing.Unsettled
		}
	})
	return outcomes, err
}

// Audit is a workspace's ledger check: the stored balances (USD and compute
// units), the ones its ledger entries add up to, and every difference
// (billing.Audit).
type Audit struct {
	Stored, Ledger           billing.Balance
	StoredUnits, LedgerUnits billing.UnitBalance
	Differences              []string
}

// AuditLedger recomputes a workspace's balances (USD and compute units)
// from its ledger and checks every job's entries against its status and
// its one currency, and every top-up by checkout's status against the
// ledger's credits (billing.AuditCheckouts). Exact when the workspace is
// quiet.
func (d *DB) AuditLedger(ctx context.Context, ws string) (Audit, error) {
	var it store.WorkspaceItem
	if err := d.Get(ctx, store.WorkspacePK(ws), "WS", &it); err != nil {
		return Audit{}, err
	}
	stored, storedUnits := it.Balance(), it.Units()
	entries, err := d.LedgerEntries(ctx, ws)
	if err != nil {
		return Audit{}, err
	}
	outcomes, err := d.JobOutcomes(ctx, ws)
	if err != nil {
		return Audit{}, err
	}
	ledger, ledgerUnits, diffs := billing.Audit(stored, storedUnits, entries, outcomes)
	var checkouts []billing.Checkout
	err = topupsdb.New(d.Store).EachCheckout(ctx, ws, func(c billing.Checkout) { checkouts = append(checkouts, c) })
	if err != nil {
		return Audit{}, err
	}
	diffs = append(diffs, billing.AuditCheckouts(entries, checkouts)...)
	return Audit{Stored: stored, Ledger: ledger, StoredUnits: storedUnits, LedgerUnits: ledgerUnits, Differences: diffs}, nil
}
