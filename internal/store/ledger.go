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
}

const ledgerPrefix = "LEDGER#"

func ledgerSK(kind billing.Kind, at time.Time, ref string) string {
	return ledgerPrefix + string(kind) + "#" + stamp(at) + "#" + ref
}

func ledgerPut(table, ws string, e billing.Entry) (*types.Put, error) {
	ref := e.JobID
	if e.Kind == billing.TopUp {
		ref = e.PaymentID
	}
	item, err := attributevalue.MarshalMap(ledgerItem{
		PK: WorkspacePK(ws), SK: ledgerSK(e.Kind, e.At, ref),
		Kind: string(e.Kind), Amount: int64(e.Amount), JobID: e.JobID, Endpoint: e.Endpoint,
		PaymentID: e.PaymentID, CreatedAt: stamp(e.At),
	})
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
	}
}

// settlement is the ledger movement that ends a job: the kind, and the
// workspace update that moves its reservation.
func settlement(to job.Status) (billing.Kind, string) {
	if to == job.Completed {
		return billing.Charge, "reserved_micros :unreserve, spent_micros :price"
	}
	return billing.Release, "reserved_micros :unreserve, available_micros :price"
}

// LedgerEntries returns every ledger entry of a workspace.
func (s *Store) LedgerEntries(ctx context.Context, ws string) ([]billing.Entry, error) {
	return s.ledger(ctx, ws, ledgerPrefix, ledgerPrefix+"\uffff")
}

// Charges returns the charges of a workspace made in [from, to]: what
// GET /usage reports.
func (s *Store) Charges(ctx context.Context, ws string, from, to time.Time) ([]billing.Entry, error) {
	prefix := ledgerPrefix + string(billing.Charge) + "#"
	return s.ledger(ctx, ws, prefix+stamp(from), prefix+stamp(to)+"#\uffff")
}

func (s *Store) ledger(ctx context.Context, ws, lo, hi string) ([]billing.Entry, error) {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("PK = :pk AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(WorkspacePK(ws)), ":lo": str(lo), ":hi": str(hi),
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

// Workspaces lists every workspace id. It scans the table: an operator's
// audit (`ledger verify --all`), never a request path.
func (s *Store) Workspaces(ctx context.Context) ([]string, error) {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		FilterExpression:          aws.String("SK = :ws"),
		ProjectionExpression:      aws.String("workspace_id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":ws": str("WS")},
	}
	var ids []string
	for {
		out, err := s.db.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list workspaces: %w", err)
		}
		for _, item := range out.Items {
			var it struct {
				ID string `dynamodbav:"workspace_id"`
			}
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return nil, err
			}
			ids = append(ids, it.ID)
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
func (s *Store) SetCreditLimit(ctx context.Context, ws string, limit billing.Micros) (billing.Balance, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       Key(WorkspacePK(ws), "WS"),
		UpdateExpression:          aws.String("SET credit_limit_micros = :limit"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":limit": num64i(int64(limit))},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return billing.Balance{}, ErrNotFound
	}
	if err != nil {
		return billing.Balance{}, fmt.Errorf("set credit limit of %s: %w", ws, err)
	}
	var it workspaceItem
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return billing.Balance{}, err
	}
	return it.balance(), nil
}

// Audit is a workspace's ledger check: the stored balance, the one its
// ledger entries add up to, and every difference (billing.Audit).
type Audit struct {
	Stored, Ledger billing.Balance
	Differences    []string
}

// AuditLedger recomputes a workspace's balance from its ledger and checks
// every job's entries against its status. Exact when the workspace is quiet.
func (s *Store) AuditLedger(ctx context.Context, ws string) (Audit, error) {
	stored, err := s.Balance(ctx, ws)
	if err != nil {
		return Audit{}, err
	}
	entries, err := s.LedgerEntries(ctx, ws)
	if err != nil {
		return Audit{}, err
	}
	outcomes, err := s.JobOutcomes(ctx, ws)
	if err != nil {
		return Audit{}, err
	}
	ledger, diffs := billing.Audit(stored, entries, outcomes)
	return Audit{Stored: stored, Ledger: ledger, Differences: diffs}, nil
}
