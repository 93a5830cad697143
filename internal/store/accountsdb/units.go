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

// A workspace's compute units live on its item beside the API balance
// (cu_available, cu_reserved, cu_spent); the job's transactions (package
// store) hold and settle them. A plan is the item's cu_plan_monthly, with
// cu_plan_month the last UTC month it was topped up for, and an entry in
// the plans' list (PLANS / WS#<id>) so that the sweeper finds every plan
// with one Query; PLANS / DONE#<month> records that a month's top-ups are
// all made, so that the month's later sweeps read one item.

const plansPK = "PLANS"

// planItem is an entry of the plans' list (PLANS / WS#<id>, its
// workspace), or a month's mark that its top-ups are all made (PLANS /
// DONE#<month>, when it was made).
type planItem struct {
	PK, SK      string
	WorkspaceID string `dynamodbav:"workspace_id,omitempty"`
	CreatedAt   string `dynamodbav:"created_at,omitempty"`
}

func planSK(ws string) string         { return "WS#" + ws }
func doneSK(month string) string      { return "DONE#" + month }
func allowanceID(month string) string { return "plan-" + month }

// monthStart is the first instant of t's UTC month: the time of the
// month's allowance entry, so that its ledger key is the same whoever
// writes it.
func monthStart(t time.Time) time.Time {
	u := t.UTC()
	return time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Units reads a workspace's compute units and its plan's monthly units.
func (s *DB) Units(ctx context.Context, ws string) (billing.UnitBalance, billing.Units, error) {
	var it store.WorkspaceItem
	if err := s.Get(ctx, store.WorkspacePK(ws), "WS", &it); err != nil {
		return billing.UnitBalance{}, 0, err
	}
	return it.Units(), billing.Units(it.PlanUnits), nil
}

// SetPlan gives workspace ws a plan of monthly compute units (0 ends it),
// in one transaction with its entry in the plans' list, and then tops the
// workspace up for the current month when that has not been done (TopUpPlan):
// a new plan's units are there at once, a changed one's from the next month.
func (s *DB) SetPlan(ctx context.Context, ws string, monthly billing.Units, now time.Time) (billing.Units, error) {
	update := &types.Update{
		TableName: aws.String(s.Table()), Key: store.Key(store.WorkspacePK(ws), "WS"),
		UpdateExpression:          aws.String("SET cu_plan_monthly = :units"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":units": store.Number(int64(monthly))},
	}
	list := types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.Table()), Key: store.Key(plansPK, planSK(ws))}}
	if monthly > 0 {
		item, err := attributevalue.MarshalMap(planItem{PK: plansPK, SK: planSK(ws), WorkspaceID: ws})
		if err != nil {
			return 0, err
		}
		list = types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.Table()), Item: item}}
	} else {
		update.UpdateExpression = aws.String("REMOVE cu_plan_monthly")
		update.ExpressionAttributeValues = nil
	}
	err := s.Transact(ctx, []types.TransactWriteItem{{Update: update}, list})
	if store.CancelReason(err, 0) == "ConditionalCheckFailed" {
		return 0, store.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("set the plan of %s: %w", ws, err)
	}
	if monthly == 0 {
		return 0, nil
	}
	return s.TopUpPlan(ctx, ws, now)
}

// TopUpPlan tops workspace ws's available compute units up to its plan's
// monthly units for the UTC month of now, once per workspace and month:
// it adds what is missing (nothing when more is available: unused units
// are not taken away) with an allowance entry keyed on the month, and
// marks the month on the workspace item, in one transaction conditioned on
// the month not being marked yet and on the units it read. However often
// it runs, retries or races itself, a month gets one top-up; a retry whose
// first answer was lost finds the month marked and stops. It returns the
// units credited by this call.
func (s *DB) TopUpPlan(ctx context.Context, ws string, now time.Time) (billing.Units, error) {
	month := billing.Month(now)
	for attempt := 0; attempt < 8; attempt++ {
		var it store.WorkspaceItem
		if err := s.Get(ctx, store.WorkspacePK(ws), "WS", &it); err != nil {
			return 0, err
		}
		if it.PlanUnits <= 0 || it.PlanMonth == month {
			return 0, nil // no plan, or this month's top-up is made
		}
		add := max(0, it.PlanUnits-it.UnitsAvailable)
		seen := "cu_available = :seen"
		if it.UnitsAvailable == 0 {
			seen = "(cu_available = :seen OR attribute_not_exists(cu_available))"
		}
		items := []types.TransactWriteItem{{Update: &types.Update{
			TableName: aws.String(s.Table()), Key: store.Key(store.WorkspacePK(ws), "WS"),
			UpdateExpression: aws.String("SET cu_plan_month = :month ADD cu_available :add"),
			ConditionExpression: aws.String("attribute_exists(PK) AND cu_plan_monthly = :plan AND " +
				"(attribute_not_exists(cu_plan_month) OR cu_plan_month <> :month) AND " + seen),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":month": store.String(month), ":add": store.Number(add),
				":plan": store.Number(it.PlanUnits), ":seen": store.Number(it.UnitsAvailable),
			},
		}}}
		if add > 0 {
			entry, err := store.LedgerPut(s.Table(), ws, billing.Entry{
				Kind: billing.Allowance, Currency: billing.CurrencyCU, Units: billing.Units(add),
				At: monthStart(now), PaymentID: allowanceID(month),
			})
			if err != nil {
				return 0, err
			}
			items = append(items, types.TransactWriteItem{Put: entry})
		}
		err := s.Transact(ctx, items)
		switch {
		case err == nil:
			return billing.Units(add), nil
		case store.CancelReason(err, 0) == "ConditionalCheckFailed",
			store.CancelReason(err, 1) == "ConditionalCheckFailed":
			continue // moved meanwhile (a job, a retry's own success): read again
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return 0, err
		default:
			return 0, fmt.Errorf("top up the plan of %s: %w", ws, err)
		}
	}
	return 0, fmt.Errorf("top up the plan of %s: the workspace kept changing", ws)
}

// EachPlan calls fn with every workspace that has a plan, from the plans'
// list (one Query, strongly consistent).
func (s *DB) EachPlan(ctx context.Context, fn func(ws string) error) error {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.Table()),
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :ws)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": store.String(plansPK), ":ws": store.String("WS#"),
		},
		ConsistentRead: aws.Bool(true),
	}
	for {
		out, err := s.Client().Query(ctx, in)
		if err != nil {
			return fmt.Errorf("list plans: %w", err)
		}
		for _, item := range out.Items {
			var it planItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return err
			}
			if err := fn(it.WorkspaceID); err != nil {
				return err
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// AllowancesDone reports whether every plan's top-up of month is made
// (MarkAllowancesDone).
func (s *DB) AllowancesDone(ctx context.Context, month string) (bool, error) {
	var it planItem
	err := s.Get(ctx, plansPK, doneSK(month), &it)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// MarkAllowancesDone records that every plan listed was topped up for
// month, so that the month's later sweeps read this one item. A plan set
// later tops itself up (SetPlan). Marking twice is harmless.
func (s *DB) MarkAllowancesDone(ctx context.Context, month string, at time.Time) error {
	item, err := attributevalue.MarshalMap(planItem{PK: plansPK, SK: doneSK(month), CreatedAt: store.Stamp(at)})
	if err != nil {
		return err
	}
	_, err = s.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table()), Item: item})
	if err != nil {
		return fmt.Errorf("mark the allowances of %s: %w", month, err)
	}
	return nil
}
