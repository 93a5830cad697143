package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/billing"
	"genjobs/internal/job"
)

// The ledger lives in the workspace's partition, one item per balance
// movement, keyed LEDGER#<kind>#<time>#<job or payment id>: the kind first,
// so that usage reads the charges of a date range alone. Entries are only
// ever put, in the same transaction as the movement they record.
type ledgerItem struct {
	PK, SK    string
	Kind      string `dynamodbav:"kind"`
	Amount    int64  `dynamodbav:"amount_micros"`
	JobID     string `dynamodbav:"job_id,omitempty"`
	Endpoint  string `dynamodbav:"endpoint,omitempty"`
	PaymentID string `dynamodbav:"payment_id,omitempty"`
	CreatedAt string `dynamodbav:"created_at"`
	// Currency is "cu" for an entry of compute units (Units), absent for
	// USD (Amount).
	Currency string `dynamodbav:"currency,omitempty"`
	Units    int64  `dynamodbav:"units,omitempty"`
	// By is the creator of a compute-unit job's charge (billing.Entry.By).
	By string `dynamodbav:"created_by,omitempty"`
}

const ledgerPrefix = "LEDGER#"

// unitsLedgerPrefix starts the keys of compute units' entries
// (LEDGER#cu#<kind>#<time>#<ref>), so that the API's usage, which reads
// LEDGER#charge#, never counts them.
const unitsLedgerPrefix = ledgerPrefix + "cu#"

func ledgerSK(e billing.Entry, ref string) string {
	prefix := ledgerPrefix
	if e.InUnits() {
		prefix = unitsLedgerPrefix
	}
	return prefix + string(e.Kind) + "#" + Stamp(e.At) + "#" + ref
}

// LedgerPut is the put of entry e of workspace ws's ledger, for the
// transaction of the movement it records (a job's reservation and
// settlement here, a top-up in package accountsdb): put once, on the
// condition that it is new.
func LedgerPut(table, ws string, e billing.Entry) (*types.Put, error) {
	ref := e.JobID
	if e.Kind == billing.TopUp || e.Kind == billing.Allowance {
		ref = e.PaymentID
	}
	it := ledgerItem{
		PK: WorkspacePK(ws), SK: ledgerSK(e, ref),
		Kind: string(e.Kind), Amount: int64(e.Amount), JobID: e.JobID, Endpoint: e.Endpoint,
		PaymentID: e.PaymentID, CreatedAt: Stamp(e.At), By: e.By,
	}
	if e.InUnits() {
		it.Currency, it.Amount, it.Units = string(billing.CurrencyCU), 0, int64(e.Units)
	}
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("encode ledger entry: %w", err)
	}
	return &types.Put{TableName: aws.String(table), Item: item, ConditionExpression: aws.String("attribute_not_exists(PK)")}, nil
}

func (it ledgerItem) entry() billing.Entry {
	at, _ := job.ParseTime(it.CreatedAt)
	return billing.Entry{
		Kind: billing.Kind(it.Kind), Amount: billing.Micros(it.Amount), At: at.Time,
		JobID: it.JobID, Endpoint: it.Endpoint, PaymentID: it.PaymentID,
		Currency: billing.Currency(it.Currency), Units: billing.Units(it.Units), By: it.By,
	}
}

// settlement is the ledger movement that ends a job: the kind, and the
// workspace update that moves its reservation, in the job's currency.
func settlement(to job.Status, units bool) (billing.Kind, string) {
	field := func(name string) string {
		if units {
			return "cu_" + name
		}
		return name + "_micros"
	}
	if to == job.Completed {
		return billing.Charge, field("reserved") + " :unreserve, " + field("spent") + " :price"
	}
	return billing.Release, field("reserved") + " :unreserve, " + field("available") + " :price"
}

// LedgerEntries returns every ledger entry of a workspace.
func (s *Store) LedgerEntries(ctx context.Context, ws string) ([]billing.Entry, error) {
	return s.ledger(ctx, ws, ledgerPrefix, ledgerPrefix+"\uffff")
}

// Charges returns the charges of a workspace made in [from, to]: what
// GET /usage reports.
func (s *Store) Charges(ctx context.Context, ws string, from, to time.Time) ([]billing.Entry, error) {
	prefix := ledgerPrefix + string(billing.Charge) + "#"
	return s.ledger(ctx, ws, prefix+Stamp(from), prefix+Stamp(to)+"#\uffff")
}

// UnitCharges returns the charges in compute units of a workspace made in
// [from, to] (LEDGER#cu#charge#...): the application's usage, each with
// the person who made its job.
func (s *Store) UnitCharges(ctx context.Context, ws string, from, to time.Time) ([]billing.Entry, error) {
	prefix := unitsLedgerPrefix + string(billing.Charge) + "#"
	return s.ledger(ctx, ws, prefix+Stamp(from), prefix+Stamp(to)+"#\uffff")
}

func (s *Store) ledger(ctx context.Context, ws, lo, hi string) ([]billing.Entry, error) {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("PK = :pk AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": String(WorkspacePK(ws)), ":lo": String(lo), ":hi": String(hi),
		},
		ConsistentRead: aws.Bool(true),
	}
	if s.pageSize > 0 {
		in.Limit = aws.Int32(s.pageSize)
	}
	var entries []billing.Entry
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("ledger of %s: %w", ws, err)
		}
		for _, item := range out.Items {
			var it ledgerItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return nil, fmt.Errorf("decode ledger entry: %w", err)
			}
			entries = append(entries, it.entry())
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
func (s *Store) JobOutcomes(ctx context.Context, ws string) (map[string]billing.Outcome, error) {
	outcomes := map[string]billing.Outcome{}
	err := s.eachJobStatus(ctx, ws, func(id string, st job.Status) {
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
