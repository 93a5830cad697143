package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/membersdb"
)

// Restored is a person of an earlier run made again in this run's pool,
// with a temporary password to sign in with (and choose their own).
type Restored struct {
	Email             string `json:"email"`
	TemporaryPassword string `json:"temporary_password"`
}

// RestorePeople brings back the people of earlier runs. moto keeps its
// Cognito pool in memory only, so every make run starts with an empty
// one, while the table (on disk) still names the people of earlier runs
// in its memberships. Each such person (but the demo owner, whom
// SeedDemoOwner makes) is made again in the pool with a new temporary
// password, and their memberships move to their new user id (the pool's
// sub, new with the user). The people and passwords are written to file
// ([{"email","temporary_password"}], 0600) and returned, for make run to
// print.
func (s *Stack) RestorePeople(ctx context.Context, st *store.Store, file string) ([]Restored, error) {
	byEmail, err := earlierMemberships(ctx, st)
	if err != nil {
		return nil, err
	}
	c, err := s.Cognito()
	if err != nil {
		return nil, err
	}
	db := membersdb.New(st)
	emails := make([]string, 0, len(byEmail))
	for e := range byEmail {
		emails = append(emails, e)
	}
	sort.Strings(emails)
	var out []Restored
	for _, email := range emails {
		if email == DemoOwnerEmail {
			continue
		}
		u, created, err := c.EnsureUser(ctx, email)
		if err != nil {
			return nil, fmt.Errorf("make %s again in the pool: %w", email, err)
		}
		if created {
			out = append(out, Restored{Email: email, TemporaryPassword: u.TemporaryPassword})
		}
		for _, m := range byEmail[email] {
			if m.UserID == u.UserID {
				continue
			}
			moved := m
			moved.UserID = u.UserID
			if err := db.AddMember(ctx, moved); err != nil && !errors.Is(err, store.ErrExists) {
				return nil, fmt.Errorf("give %s's membership of %s to their new user: %w", email, m.WorkspaceID, err)
			}
			if err := db.RemoveMember(ctx, m.WorkspaceID, m.UserID); err != nil && !errors.Is(err, member.ErrNotMember) {
				return nil, fmt.Errorf("remove %s's earlier membership of %s: %w", email, m.WorkspaceID, err)
			}
		}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	if out == nil {
		b = []byte("[]")
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o600); err != nil {
		return nil, err
	}
	return out, nil
}

// earlierMemberships reads every membership of the table by the person's
// email: a Scan, which the local stack's small table affords.
func earlierMemberships(ctx context.Context, st *store.Store) (map[string][]member.Membership, error) {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(st.Table()),
		FilterExpression:          aws.String("begins_with(PK, :user) AND begins_with(SK, :member)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":user": store.String("USER#"), ":member": store.String("MEMBER#")},
	}
	out := map[string][]member.Membership{}
	for {
		page, err := st.Client().Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read the table's memberships: %w", err)
		}
		for _, item := range page.Items {
			var it struct {
				WorkspaceID string `dynamodbav:"workspace_id"`
				UserID      string `dynamodbav:"user_id"`
				Email       string `dynamodbav:"email"`
				Role        string `dynamodbav:"role"`
				AddedAt     string `dynamodbav:"added_at"`
			}
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return nil, err
			}
			email := member.NormalizeEmail(it.Email)
			added, _ := job.ParseTime(it.AddedAt)
			out[email] = append(out[email], member.Membership{WorkspaceID: it.WorkspaceID, UserID: it.UserID, Email: email,
				Role: member.Role(it.Role), AddedAt: added.Time})
		}
		if page.LastEvaluatedKey == nil {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
