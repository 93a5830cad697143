package membersdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/member"
	"genjobs/internal/store"
)

// MoveMember gives ws's membership of user from (email, role, when added)
// to user to: a person whose user the pool had lost and made again, with a
// new id. Both items move in one transaction; the owner count stays. A
// retry whose first answer was lost finds the move done and succeeds;
// member.ErrNotMember when from is no member and to is none either.
func (d *DB) MoveMember(ctx context.Context, ws, from, to string) (member.Membership, error) {
	m, err := d.Membership(ctx, ws, from)
	if errors.Is(err, member.ErrNotMember) {
		return d.Membership(ctx, ws, to) // moved already, or never a member
	}
	if err != nil {
		return member.Membership{}, err
	}
	del := func(pk, sk string) types.TransactWriteItem {
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(d.Table()), Key: store.Key(pk, sk),
			ConditionExpression:       aws.String("#role = :role"),
			ExpressionAttributeNames:  map[string]string{"#role": "role"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":role": store.String(string(m.Role))},
		}}
	}
	moved := m
	moved.UserID = to
	puts, err := d.memberPuts(moved, "attribute_not_exists(PK)", nil)
	if err != nil {
		return member.Membership{}, err
	}
	items := append([]types.TransactWriteItem{del(store.WorkspacePK(ws), memberPrefix+from), del(store.UserPK(from), memberPrefix+ws)}, puts...)
	switch err := d.Transact(ctx, items); {
	case err == nil:
		return moved, nil
	case store.CancelReason(err, 2) == "ConditionalCheckFailed":
		return member.Membership{}, store.ErrExists // to is a member already
	case store.CancelReason(err, 0) == "ConditionalCheckFailed":
		return member.Membership{}, errors.New("move member: the membership changed meanwhile; try again")
	default:
		return member.Membership{}, fmt.Errorf("move member: %w", err)
	}
}
