// Package membersdb keeps the workspaces' memberships in the service's
// table: each stored under the workspace and under the person, with the
// workspace item's owner count kept in the same transaction.
package membersdb

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/auth"
	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
)

// DB is the store with the memberships besides.
type DB struct {
	*store.Store
}

// New returns the memberships on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// A membership is stored twice, written together: under the workspace
// (WS#<ws> / MEMBER#<user>: the members page) and under the person
// (USER#<user> / MEMBER#<ws>: their workspaces, read at each console
// request). The workspace item counts its owners (owners), so that the
// last one can neither leave nor be demoted: the count is conditioned in
// the same transaction as the change.
type memberItem struct {
	PK, SK        string
	WorkspaceID   string `dynamodbav:"workspace_id"`
	WorkspaceName string `dynamodbav:"workspace_name"`
	UserID        string `dynamodbav:"user_id"`
	Email         string `dynamodbav:"email"`
	Role          string `dynamodbav:"role"`
	AddedAt       string `dynamodbav:"added_at"`
}

const memberPrefix = "MEMBER#"

func (it memberItem) membership() member.Membership {
	at, _ := job.ParseTime(it.AddedAt)
	return member.Membership{WorkspaceID: it.WorkspaceID, WorkspaceName: it.WorkspaceName, UserID: it.UserID,
		Email: it.Email, Role: member.Role(it.Role), AddedAt: at.Time}
}

// memberPuts are the two items of m, each put on condition.
func (d *DB) memberPuts(m member.Membership, condition string, values map[string]types.AttributeValue) ([]types.TransactWriteItem, error) {
	var out []types.TransactWriteItem
	for _, k := range [][2]string{{store.WorkspacePK(m.WorkspaceID), memberPrefix + m.UserID}, {store.UserPK(m.UserID), memberPrefix + m.WorkspaceID}} {
		item, err := attributevalue.MarshalMap(memberItem{PK: k[0], SK: k[1], WorkspaceID: m.WorkspaceID, WorkspaceName: m.WorkspaceName,
			UserID: m.UserID, Email: m.Email, Role: string(m.Role), AddedAt: store.Stamp(m.AddedAt)})
		if err != nil {
			return nil, err
		}
		put := &types.Put{TableName: aws.String(d.Table()), Item: item, ConditionExpression: aws.String(condition)}
		if len(values) > 0 {
			put.ExpressionAttributeValues = values
		}
		out = append(out, types.TransactWriteItem{Put: put})
	}
	return out, nil
}

// ownersChange is the workspace item's update of its owner count by delta;
// a decrease is conditioned on another owner remaining.
func (d *DB) ownersChange(ws string, delta int) types.TransactWriteItem {
	u := &types.Update{
		TableName: aws.String(d.Table()), Key: store.Key(store.WorkspacePK(ws), "WS"),
		UpdateExpression:          aws.String("ADD owners :d"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": store.Number(int64(delta))},
	}
	if delta < 0 {
		u.ConditionExpression = aws.String("attribute_exists(PK) AND owners > :one")
		u.ExpressionAttributeValues[":one"] = store.Number(1)
	}
	return types.TransactWriteItem{Update: u}
}

// AddMember makes m.UserID a member of m.WorkspaceID with m.Role, the
// workspace's name copied from the workspace. A person who is a member
// already keeps their membership: ErrExists, unless the role is the same
// (a retried add succeeds). A missing workspace is ErrNotFound.
func (d *DB) AddMember(ctx context.Context, m member.Membership) error {
	w, err := accountsdb.New(d.Store).Workspace(ctx, m.WorkspaceID)
	if err != nil {
		return fmt.Errorf("add member: %w", notFound(err))
	}
	m.WorkspaceName = w.Name
	items, err := d.memberPuts(m, "attribute_not_exists(PK)", nil)
	if err != nil {
		return err
	}
	delta := 0
	if m.Role == member.Owner {
		delta = 1
	}
	items = append(items, d.ownersChange(m.WorkspaceID, delta))
	err = d.Transact(ctx, items)
	switch {
	case store.CancelReason(err, 0) == "ConditionalCheckFailed":
		prior, rerr := d.Membership(ctx, m.WorkspaceID, m.UserID)
		if rerr != nil {
			return rerr
		}
		if prior.Role == m.Role {
			return nil
		}
		return store.ErrExists
	case store.CancelReason(err, 2) == "ConditionalCheckFailed":
		return store.ErrNotFound
	case err != nil:
		return fmt.Errorf("add member: %w", err)
	}
	return nil
}

// notFound turns the directory's not-found (auth.ErrNotFound) into the store's.
func notFound(err error) error {
	if errors.Is(err, auth.ErrNotFound) {
		return store.ErrNotFound
	}
	return err
}

// Membership reads one person's membership of a workspace: member.ErrNotMember when none.
func (d *DB) Membership(ctx context.Context, ws, user string) (member.Membership, error) {
	var it memberItem
	if err := d.Get(ctx, store.WorkspacePK(ws), memberPrefix+user, &it); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return member.Membership{}, member.ErrNotMember
		}
		return member.Membership{}, err
	}
	return it.membership(), nil
}

// SetRole changes a member's role. Demoting the last owner is
// member.ErrLastOwner; someone who is not a member, member.ErrNotMember.
func (d *DB) SetRole(ctx context.Context, ws, user string, role member.Role) (member.Membership, error) {
	for attempt := 0; ; attempt++ {
		m, err := d.Membership(ctx, ws, user)
		if err != nil || m.Role == role {
			return m, err
		}
		old := m.Role
		m.Role = role
		items, err := d.memberPuts(m, "#role = :old", map[string]types.AttributeValue{":old": store.String(string(old))})
		if err != nil {
			return m, err
		}
		for i := range items {
			items[i].Put.ExpressionAttributeNames = map[string]string{"#role": "role"}
		}
		switch {
		case old == member.Owner:
			items = append(items, d.ownersChange(ws, -1))
		case role == member.Owner:
			items = append(items, d.ownersChange(ws, 1))
		}
		err = d.Transact(ctx, items)
		switch {
		case err == nil:
			return m, nil
		case len(items) == 3 && store.CancelReason(err, 2) == "ConditionalCheckFailed":
			return m, member.ErrLastOwner
		case store.CancelReason(err, 0) == "ConditionalCheckFailed" && attempt < 3:
			continue // changed meanwhile: decide again on what it is now
		}
		return m, fmt.Errorf("set role: %w", err)
	}
}

// RemoveMember ends a membership. The last owner cannot leave
// (member.ErrLastOwner); removing someone who is not a member is
// member.ErrNotMember.
func (d *DB) RemoveMember(ctx context.Context, ws, user string) error {
	for attempt := 0; ; attempt++ {
		m, err := d.Membership(ctx, ws, user)
		if err != nil {
			return err
		}
		del := func(pk, sk string) types.TransactWriteItem {
			return types.TransactWriteItem{Delete: &types.Delete{
				TableName: aws.String(d.Table()), Key: store.Key(pk, sk),
				ConditionExpression:       aws.String("#role = :old"),
				ExpressionAttributeNames:  map[string]string{"#role": "role"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":old": store.String(string(m.Role))},
			}}
		}
		items := []types.TransactWriteItem{del(store.WorkspacePK(ws), memberPrefix+user), del(store.UserPK(user), memberPrefix+ws)}
		if m.Role == member.Owner {
			items = append(items, d.ownersChange(ws, -1))
		}
		err = d.Transact(ctx, items)
		switch {
		case err == nil:
			return nil
		case len(items) == 3 && store.CancelReason(err, 2) == "ConditionalCheckFailed":
			return member.ErrLastOwner
		case store.CancelReason(err, 0) == "ConditionalCheckFailed" && attempt < 3:
			continue
		}
		return fmt.Errorf("remove member: %w", err)
	}
}

// Members lists a workspace's members by email.
func (d *DB) Members(ctx context.Context, ws string) ([]member.Membership, error) {
	out, err := d.memberships(ctx, store.WorkspacePK(ws))
	sort.Slice(out, func(i, j int) bool { return out[i].Email < out[j].Email })
	return out, err
}

// Memberships lists a person's workspaces by name.
func (d *DB) Memberships(ctx context.Context, user string) ([]member.Membership, error) {
	out, err := d.memberships(ctx, store.UserPK(user))
	sort.Slice(out, func(i, j int) bool {
		if out[i].WorkspaceName != out[j].WorkspaceName {
			return out[i].WorkspaceName < out[j].WorkspaceName
		}
		return out[i].WorkspaceID < out[j].WorkspaceID
	})
	return out, err
}

func (d *DB) memberships(ctx context.Context, pk string) ([]member.Membership, error) {
	var out []member.Membership
	err := d.QueryPrefix(ctx, pk, memberPrefix, func(item map[string]types.AttributeValue) error {
		var it memberItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return err
		}
		out = append(out, it.membership())
		return nil
	})
	return out, err
}
