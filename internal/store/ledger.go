package store

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/billing"
	"genjobs/internal/job"
)

// The ledger lives in the workspace's partition, one item per balance
// movement, keyed LEDGER#<kind>#<time>#<job or payment id>: the kind first,
// so that usage reads the charges of a date range alone. Entries are only
// ever put, in the same transaction as the movement they record (a job's
// reservation and settlement here, a payment or a plan's allowance in
// package accountsdb), so the item's shape and key are here, with the
// transactions; package ledgerdb reads and audits the ledger.
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

// LedgerPrefix starts the sort keys of a workspace's ledger entries of kind
// (every entry, of either currency, when kind is ""), in compute units
// when units: the ranges package ledgerdb reads.
func LedgerPrefix(kind billing.Kind, units bool) string {
	switch {
	case kind == "":
		return ledgerPrefix
	case units:
		return unitsLedgerPrefix + string(kind) + "#"
	}
	return ledgerPrefix + string(kind) + "#"
}

// LedgerEntry decodes a ledger item (package ledgerdb reads them).
func LedgerEntry(item map[string]types.AttributeValue) (billing.Entry, error) {
	var it ledgerItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return billing.Entry{}, fmt.Errorf("decode ledger entry: %w", err)
	}
	at, _ := job.ParseTime(it.CreatedAt)
	return billing.Entry{
		Kind: billing.Kind(it.Kind), Amount: billing.Micros(it.Amount), At: at.Time,
		JobID: it.JobID, Endpoint: it.Endpoint, PaymentID: it.PaymentID,
		Currency: billing.Currency(it.Currency), Units: billing.Units(it.Units), By: it.By,
	}, nil
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
