package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/store/idempotencydb"
)

// The slot counters on the workspace item (docs/api.md, "Limits"): jobs_active
// counts jobs that have not ended (bounded by max_concurrent), jobs_running
// those of them past backlogged (bounded by max_running). They change only in
// the same transaction as a job's creation, promotion or end, so they are
// exact; `workspace verify` recounts them (package slotsdb).

// Conditions on the workspace item at creation. Items written before the
// counters existed have none; ADD starts them at zero.
const (
	// A new job may run at once when a running slot is free and no job of
	// the workspace is waiting (active == running): the backlog goes first.
	condRunNow = "(attribute_not_exists(jobs_active) OR " +
		"(jobs_active < max_concurrent AND jobs_running < max_running AND jobs_active = jobs_running))"
	condAnySlot = "(attribute_not_exists(jobs_active) OR jobs_active < max_concurrent)"
)

// condFunds is the balance condition at creation. DynamoDB conditions do no
// arithmetic, so the credit limit the caller believes in is part of the
// condition: available >= price - limit holds only while the limit is
// that one, and a changed limit fails the write and is retried with it.
func condFunds(limit billing.Micros) string {
	if limit == 0 {
		return "(attribute_not_exists(credit_limit_micros) OR credit_limit_micros = :limit) AND available_micros >= :needed"
	}
	return "credit_limit_micros = :limit AND available_micros >= :needed"
}

// Items of the creation transaction, in this order (cancellation reasons
// follow it).
const (
	createJobItem = iota
	createWorkspaceItem
	createLedgerItem
	createKeyItem
)

// CreateJob stores a new job in one transaction with everything its
// creation moves: its slots on the workspace item (Queued when a running
// slot is free and nothing waits before it, else Backlogged; j.Status is set
// to the outcome), its price moved from available to reserved with the
// reservation's ledger entry, and the client's Idempotency-Key when it sent
// one. A refused creation writes nothing. Errors: billing.ErrInsufficientFunds
// when the balance (with the Net 30 credit limit) does not cover j.Price,
// job.ErrTooManyJobs when the workspace has max_concurrent jobs that have
// not ended, *job.Replayed / job.ErrKeyReused / job.ErrKeyInFlight for a
// known key, ErrExists when the id is taken, ErrNotFound when the
// workspace is missing.
func (s *Store) CreateJob(ctx context.Context, j *job.Job) error {
	limit := s.creditLimit(j.WorkspaceID)
	st := job.Queued
	for attempt := 0; attempt < 4; attempt++ {
		items, err := s.creationItems(j, st, limit)
		if err != nil {
			return err
		}
		err = s.transact(ctx, items)
		switch {
		case err == nil:
			return nil
		case j.Idempotency != nil && cancelReason(err, createKeyItem) == "ConditionalCheckFailed":
			return idempotencydb.Judge(j, cancelItem(err, createKeyItem))
		case j.Idempotency != nil && conflicted(err):
			return job.ErrKeyInFlight // a concurrent request with the key holds it
		case cancelReason(err, createJobItem) == "ConditionalCheckFailed":
			return fmt.Errorf("create job %s: %w", j.ID, ErrExists)
		case cancelReason(err, createWorkspaceItem) != "ConditionalCheckFailed":
			return fmt.Errorf("create job %s: %w", j.ID, err)
		}
		old := cancelItem(err, createWorkspaceItem)
		if old == nil {
			return fmt.Errorf("create job %s: workspace %s: %w", j.ID, j.WorkspaceID, ErrNotFound)
		}
		var ws WorkspaceItem
		if err := attributevalue.UnmarshalMap(old, &ws); err != nil {
			return fmt.Errorf("create job %s: decode workspace: %w", j.ID, err)
		}
		switch b := ws.Balance(); {
		case j.InUnits() && !ws.Units().Covers(j.Units):
			return billing.ErrOutOfUnits
		case !j.InUnits() && b.CreditLimit != limit: // an operator changed it: judge again
			limit = b.CreditLimit
			s.limits.Store(j.WorkspaceID, limit)
		case !j.InUnits() && !b.Covers(j.Price):
			return billing.ErrInsufficientFunds
		case ws.Active >= ws.MaxConcurrent:
			return job.ErrTooManyJobs
		default: // running slots are full, or others wait: backlogged
			st = job.Backlogged
		}
	}
	return fmt.Errorf("create job %s: the workspace kept changing", j.ID)
}

// creditLimit is the last credit limit seen for a workspace: zero for most,
// and a wrong guess only costs one more try.
func (s *Store) creditLimit(ws string) billing.Micros {
	if v, ok := s.limits.Load(ws); ok {
		return v.(billing.Micros)
	}
	return 0
}

func (s *Store) creationItems(j *job.Job, st job.Status, limit billing.Micros) ([]types.TransactWriteItem, error) {
	j.Status = st
	j.QueuedAt = nil
	running, cond := 0, condAnySlot
	if st == job.Queued {
		at := j.CreatedAt
		j.QueuedAt = &at
		running, cond = 1, condRunNow
	}
	item, err := attributevalue.MarshalMap(toJobItem(j))
	if err != nil {
		return nil, fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	entry := billing.Entry{Kind: billing.Reserve, Amount: j.Price, At: j.CreatedAt, JobID: j.ID, Endpoint: j.Endpoint}
	// The hold, in the job's one currency: USD from the API balance (with
	// the credit limit), or compute units, which never go below zero.
	moves := "available_micros :unavailable, reserved_micros :price"
	funds := condFunds(limit)
	values := map[string]types.AttributeValue{
		":one": Number(1), ":running": Number(running),
		":price": Number(int64(j.Price)), ":unavailable": Number(-int64(j.Price)),
		":limit": Number(int64(limit)), ":needed": Number(int64(j.Price - limit)),
	}
	if j.InUnits() {
		entry = billing.Entry{Kind: billing.Reserve, Currency: billing.CurrencyCU, Units: j.Units, At: j.CreatedAt, JobID: j.ID, Endpoint: j.Endpoint}
		moves, funds = "cu_available :unavailable, cu_reserved :price", "cu_available >= :price"
		if j.Units == 0 { // free: nothing to cover (and an old item has no units)
			funds = "attribute_exists(PK)"
		}
		values = map[string]types.AttributeValue{
			":one": Number(1), ":running": Number(running),
			":price": Number(int64(j.Units)), ":unavailable": Number(-int64(j.Units)),
		}
	}
	reserve, err := LedgerPut(s.table, j.WorkspaceID, entry)
	if err != nil {
		return nil, err
	}
	items := []types.TransactWriteItem{
		createJobItem: {Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		createWorkspaceItem: {Update: &types.Update{
			TableName: aws.String(s.table), Key: Key(WorkspacePK(j.WorkspaceID), "WS"),
			UpdateExpression:                    aws.String("ADD jobs_active :one, jobs_running :running, " + moves),
			ConditionExpression:                 aws.String("attribute_exists(PK) AND " + cond + " AND " + funds),
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		createLedgerItem: {Put: reserve},
	}
	if j.Idempotency != nil {
		key, err := idempotencydb.Put(s.table, j)
		if err != nil {
			return nil, err
		}
		items = append(items, key)
	}
	// Last, after the items whose cancellation reasons are read by index.
	position := job.TimeOf(j.CreatedAt).String() + "#" + j.ID
	source := cmp.Or(j.Source, job.SourceAPI)
	req, err := attributevalue.MarshalMap(requestItem{PK: JobPK(j.ID), SK: requestSK, Request: string(j.Request),
		GSI5PK: filterPK(j.WorkspaceID, "source", source), GSI5SK: position})
	if err != nil {
		return nil, fmt.Errorf("encode job %s's request: %w", j.ID, err)
	}
	items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: req}})
	if j.PersonID != "" {
		by, err := attributevalue.MarshalMap(personItem{PK: JobPK(j.ID), SK: filterSK,
			GSI5PK: filterPK(j.WorkspaceID, "person", j.PersonID), GSI5SK: position})
		if err != nil {
			return nil, fmt.Errorf("encode job %s's person: %w", j.ID, err)
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: by}})
	}
	return items, nil
}

// Transition applies c to job j when the stored job allows it, and returns
// the job as it now stands. j is the caller's last read of the job: its id,
// workspace and creation time (which never change) give the keys; its status
// is only a first guess, the stored one decides. It is the one write every
// writer of a job's status uses (worker, client cancellation, sweeper,
// promotion):
//   - the stored status must be one c.To may follow (job.Status.CanMoveTo),
//     or equal c.To for a progress write to a job that has not ended;
//   - progress never goes down; a writer holding a lease must still hold it;
//   - a change that moves slots (a promotion out of backlogged, any end) is
//     one TransactWriteItems with the workspace's counters, so that billing
//     can add its settlement to the same transaction.
//
// On job.ErrConflict the returned job is the stored one, so the caller can
// tell why (already ended, taken over). A promotion without a free running
// slot gives job.ErrNoRunningSlot.
func (s *Store) Transition(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error) {
	if !c.To.Terminal() && c.To != job.Queued {
		return s.update(ctx, j, c, now)
	}
	// Slots move: the exact status the job leaves decides which, so write on
	// the condition that the stored status is still the one last read. An
	// end settles the job's price: a view without it (the sweeper's, from
	// an index) is completed by a read first.
	cur := j
	if c.To.Terminal() && j.Endpoint == "" {
		stored, err := s.Job(ctx, j.ID)
		if err != nil {
			return nil, err
		}
		cur = stored
	}
	for attempt := 0; ; attempt++ {
		if !cur.Status.CanMoveTo(c.To) {
			if cur.Status == c.To && !c.To.Terminal() {
				return s.update(ctx, cur, c, now)
			}
			if attempt == 0 { // the caller's view may be old: judge the stored job
				stored, err := s.Job(ctx, j.ID)
				if err != nil {
					return nil, err
				}
				if cur = stored; cur.Status.CanMoveTo(c.To) {
					continue
				}
			}
			return cur, job.ErrConflict
		}
		next, err := s.moveSlots(ctx, cur, c, now)
		if !errors.Is(err, errStale) || attempt == 4 {
			return next, err
		}
		cur = next
	}
}

// errStale: the job changed between the read and the transaction.
var errStale = errors.New("store: job changed since read")

// moveSlots writes a change that frees or takes slots, conditioned on the job
// still being in cur.Status. An end also settles the job's reservation in
// the same transaction: charged when it completed, released otherwise, with
// its ledger entry and the job's settlement mark, so a repeated or racing
// end settles nothing twice.
func (s *Store) moveSlots(ctx context.Context, cur *job.Job, c job.Change, now time.Time) (*job.Job, error) {
	u := newJobUpdate(cur, c, now)
	u.cond("#status = :from")
	u.values[":from"] = String(string(cur.Status))
	active, running := 0, 0
	wsUpdate := "ADD jobs_active :active, jobs_running :running"
	wsCond := "attribute_exists(PK)"
	wsValues := map[string]types.AttributeValue{}
	var entry *types.Put
	if c.To.Terminal() {
		active = -1
		if cur.Status.Running() {
			running = -1
		}
		kind, moves := settlement(c.To, cur.InUnits())
		wsUpdate += ", " + moves
		u.set("settlement", String(string(kind)))
		// The price settled is the one reserved, in the currency it was
		// reserved in: a caller's partial view of the job fails here and is
		// read again.
		u.cond("attribute_not_exists(settlement) AND (price_micros = :price OR attribute_not_exists(price_micros))")
		u.values[":price"] = Number(int64(cur.Price))
		e := billing.Entry{Kind: kind, Amount: cur.Price, At: now, JobID: cur.ID, Endpoint: cur.Endpoint}
		settled := int64(cur.Price)
		if cur.InUnits() {
			u.cond("currency = :cu AND (price_units = :units OR attribute_not_exists(price_units))")
			u.values[":cu"], u.values[":units"] = String(string(billing.CurrencyCU)), Number(int64(cur.Units))
			// The entry names who made the job (the usage page's spend by
			// person): the one the stored job names, or a view without it
			// is read again.
			if cur.CreatedBy == "" {
				u.cond("attribute_not_exists(created_by)")
			} else {
				u.cond("created_by = :by")
				u.values[":by"] = String(cur.CreatedBy)
			}
			e = billing.Entry{Kind: kind, Currency: billing.CurrencyCU, Units: cur.Units, At: now, JobID: cur.ID, Endpoint: cur.Endpoint, By: cur.CreatedBy}
			settled = int64(cur.Units)
		} else {
			u.cond("(attribute_not_exists(currency) OR currency = :usd)")
			u.values[":usd"] = String(string(billing.CurrencyUSD))
		}
		wsValues[":price"], wsValues[":unreserve"] = Number(settled), Number(-settled)
		var err error
		entry, err = LedgerPut(s.table, cur.WorkspaceID, e)
		if err != nil {
			return nil, err
		}
	} else { // backlogged -> queued
		running = 1
		wsCond += " AND jobs_running < max_running"
		u.set("queued_at", String(Stamp(now)))
	}
	wsValues[":active"], wsValues[":running"] = Number(active), Number(running)
	items := []types.TransactWriteItem{
		{Update: u.build(s.table)},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: Key(WorkspacePK(cur.WorkspaceID), "WS"),
			UpdateExpression:          aws.String(wsUpdate),
			ConditionExpression:       aws.String(wsCond),
			ExpressionAttributeValues: wsValues,
		}},
	}
	if entry != nil {
		items = append(items, types.TransactWriteItem{Put: entry})
	}
	err := s.transact(ctx, items)
	switch {
	case err == nil:
		return s.Job(ctx, cur.ID)
	case cancelReason(err, 0) == "ConditionalCheckFailed":
		stored, rerr := s.Job(ctx, cur.ID)
		if rerr != nil {
			return nil, rerr
		}
		if stored.Status != cur.Status || stored.Price != cur.Price || stored.Endpoint != cur.Endpoint ||
			stored.InUnits() != cur.InUnits() || stored.Units != cur.Units || (stored.InUnits() && stored.CreatedBy != cur.CreatedBy) {
			return stored, errStale
		}
		return stored, job.ErrConflict // the lease or the progress refused it
	case cancelReason(err, 1) == "ConditionalCheckFailed":
		return cur, job.ErrNoRunningSlot
	}
	return nil, fmt.Errorf("transition job %s to %s: %w", cur.ID, c.To, err)
}

// update writes a change that moves no slot: one conditional UpdateItem.
func (s *Store) update(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error) {
	u := newJobUpdate(j, c, now)
	from := append(c.To.From(), c.To)
	names := make([]string, len(from))
	for i, st := range from {
		names[i] = ":from" + strconv.Itoa(i)
		u.values[names[i]] = String(string(st))
	}
	u.cond("attribute_exists(PK) AND #status IN (" + strings.Join(names, ", ") + ")")
	in := u.build(s.table)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: in.TableName, Key: in.Key,
		UpdateExpression: in.UpdateExpression, ConditionExpression: in.ConditionExpression,
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		if len(failed.Item) == 0 {
			return nil, job.ErrNotFound
		}
		cur, err := decodeJob(failed.Item)
		if err != nil {
			return nil, err
		}
		if ownClaim(cur, c) {
			// The SDK retried a claim whose first answer was lost: the
			// lease in force is the one this claim wrote.
			return cur, nil
		}
		return cur, job.ErrConflict
	}
	if err != nil {
		return nil, fmt.Errorf("transition job %s to %s: %w", j.ID, c.To, err)
	}
	return decodeJob(out.Attributes)
}

// ownClaim says whether the stored job cur is what claim c wrote: lease ids
// are random and written only by the claim that drew them, so a stored
// lease with c's id and until, in c's status, is c's own success.
func ownClaim(cur *job.Job, c job.Change) bool {
	return c.Holder == "" && c.Lease != nil && cur.Status == c.To &&
		cur.Lease.ID == c.Lease.ID && cur.Lease.Until.Equal(job.TimeOf(c.Lease.Until).Time)
}

// jobUpdate builds the UpdateItem of one change to a job.
type jobUpdate struct {
	key    map[string]types.AttributeValue
	sets   []string
	adds   []string
	remove []string
	conds  []string
	names  map[string]string
	values map[string]types.AttributeValue
}

func newJobUpdate(j *job.Job, c job.Change, now time.Time) *jobUpdate {
	u := &jobUpdate{
		key:    Key(JobPK(j.ID), "JOB"),
		names:  map[string]string{"#status": "status"},
		values: map[string]types.AttributeValue{},
	}
	u.set("#status", String(string(c.To)))
	u.set("updated_at", String(Stamp(now)))
	if c.To.Terminal() {
		// Off the status index, and no lease to hold any more.
		u.set("completed_at", String(Stamp(now)))
		u.remove = append(u.remove, "GSI2PK", "GSI2SK", "lease_id", "lease_until")
	} else {
		u.set("GSI2PK", String(statusPK(c.To, Shard(j.WorkspaceID))))
		u.set("GSI2SK", String(statusSK(j.WorkspaceID, j.CreatedAt, j.ID)))
	}
	// The first move past queued starts the job (the details' started_at);
	// a completion straight from queued (a provider's first answer) too.
	if c.To != job.Queued && c.To != job.Backlogged && c.To != job.Failed && c.To != job.Cancelled {
		u.sets = append(u.sets, "started_at = if_not_exists(started_at, :updated_at)")
	}
	if c.Progress != nil {
		u.set("progress", num64(*c.Progress))
		u.cond("(attribute_not_exists(progress) OR progress <= :progress)")
	}
	if c.Outputs != nil {
		b, _ := json.Marshal(c.Outputs)
		u.set("#result", String(string(b)))
		u.names["#result"] = "result"
	}
	if c.Error != nil {
		u.set("error_code", String(c.Error.Code))
		u.set("error_message", String(c.Error.Message))
	}
	switch {
	case c.Holder != "":
		u.cond("lease_id = :holder")
		u.values[":holder"] = String(c.Holder)
	case c.Lease != nil: // a claim: only when no lease is in force
		u.cond("(attribute_not_exists(lease_until) OR lease_until < :now)")
		u.values[":now"] = String(Stamp(now))
		u.adds = append(u.adds, "attempts :one")
		u.values[":one"] = Number(1)
	}
	if c.Lane != "" && !c.To.Terminal() {
		u.set("#lane", String(c.Lane))
		u.names["#lane"] = "lane"
	}
	if c.Lease != nil && !c.To.Terminal() {
		u.set("lease_id", String(c.Lease.ID))
		u.set("lease_until", String(Stamp(c.Lease.Until)))
	}
	return u
}

// set adds "name = :name" (the value placeholder is the name without '#').
func (u *jobUpdate) set(name string, v types.AttributeValue) {
	ph := ":" + strings.TrimPrefix(name, "#")
	u.sets = append(u.sets, name+" = "+ph)
	u.values[ph] = v
}

func (u *jobUpdate) cond(c string) { u.conds = append(u.conds, c) }

func (u *jobUpdate) build(table string) *types.Update {
	expr := "SET " + strings.Join(u.sets, ", ")
	if len(u.adds) > 0 {
		expr += " ADD " + strings.Join(u.adds, ", ")
	}
	if len(u.remove) > 0 {
		expr += " REMOVE " + strings.Join(u.remove, ", ")
	}
	return &types.Update{
		TableName: aws.String(table), Key: u.key,
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(strings.Join(u.conds, " AND ")),
		ExpressionAttributeNames:  u.names,
		ExpressionAttributeValues: u.values,
	}
}

func decodeJob(item map[string]types.AttributeValue) (*job.Job, error) {
	var it jobItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return nil, fmt.Errorf("decode job: %w", err)
	}
	return it.toJob()
}

// Transact runs a transaction on the store's table, retrying the conflicts
// DynamoDB reports when another transaction touched the same items at the
// same moment. The aggregate packages (topupsdb, accountsdb, ...) write through it.
func (s *Store) Transact(ctx context.Context, items []types.TransactWriteItem) error {
	return s.transact(ctx, items)
}

// transact runs a transaction, retrying the conflicts DynamoDB reports when
// another transaction touched the same items at the same moment.
func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if !conflicted(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
		}
	}
	return err
}

func conflicted(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return true
		}
	}
	return false
}

// cancelItem is the item a cancelled transaction returned for item i (with
// ReturnValuesOnConditionCheckFailure ALL_OLD), or nil.
func cancelItem(err error, i int) map[string]types.AttributeValue {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || i >= len(tce.CancellationReasons) {
		return nil
	}
	return tce.CancellationReasons[i].Item
}

// Number is a whole-number attribute value.
func Number[N ~int | ~int64](n N) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(n), 10)}
}

func num64(f float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'f', -1, 64)}
}
