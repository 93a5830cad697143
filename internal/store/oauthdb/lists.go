package oauthdb

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/store"
)

// A workspace's grants and a person's are listed by items of their own,
// written with the grant (Redeem): the connections page reads them, an
// owner revokes from them, and removing a member revokes theirs. They point
// at the grant, whose item says whether it is still live.

const listPK = "OAUTHLIST#"

func wsList(ws string) string     { return listPK + "WS#" + ws }
func userList(user string) string { return listPK + "USER#" + user }

// listItem is a grant's place in a list.
type listItem struct {
	PK, SK  string
	GrantID string `dynamodbav:"grant_id"`
}

// listPut writes g's place in the list pk; a retry of the same redemption
// meets its own.
func listPut(table *string, pk string, g Grant) types.TransactWriteItem {
	item, _ := attributevalue.MarshalMap(listItem{
		PK: pk, SK: "GRANT#" + g.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000000Z") + "#" + g.ID, GrantID: g.ID,
	})
	return types.TransactWriteItem{Put: &types.Put{
		TableName: table, Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR grant_id = :g"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": str(g.ID)},
	}}
}

// GrantsOfWorkspace is every grant of workspace ws, revoked ones too,
// newest first: what an owner sees on the connections page.
func (s *DB) GrantsOfWorkspace(ctx context.Context, ws string) ([]Grant, error) {
	return s.grantsIn(ctx, wsList(ws))
}

// GrantsOfPerson is every grant a person made, in any workspace, revoked
// ones too, newest first.
func (s *DB) GrantsOfPerson(ctx context.Context, userID string) ([]Grant, error) {
	return s.grantsIn(ctx, userList(userID))
}

// RevokeMember revokes every live grant userID made in workspace ws (the
// member was removed) and returns how many.
func (s *DB) RevokeMember(ctx context.Context, ws, userID string, now time.Time) (int, error) {
	gs, err := s.GrantsOfWorkspace(ctx, ws)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, g := range gs {
		if g.UserID != userID || !g.Live() {
			continue
		}
		if err := s.RevokeGrant(ctx, g.ID, now); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// RevokePerson revokes every live grant userID made, in every workspace
// (the person was disabled, or is gone from the user pool), and returns
// them as revoked. A retry finds those it revoked already not live and
// revokes the rest.
func (s *DB) RevokePerson(ctx context.Context, userID string, now time.Time) ([]Grant, error) {
	gs, err := s.GrantsOfPerson(ctx, userID)
	if err != nil {
		return nil, err
	}
	revoked := []Grant{}
	for _, g := range gs {
		if g.UserID != userID || !g.Live() {
			continue
		}
		if err := s.RevokeGrant(ctx, g.ID, now); err != nil {
			return revoked, err
		}
		g.RevokedAt = &now
		revoked = append(revoked, g)
	}
	return revoked, nil
}

// maxBatchGet is how many keys one BatchGetItem takes.
const maxBatchGet = 100

// grantsIn reads the list pk, then its grants (strongly consistent, so that
// a revocation just made shows), newest first.
func (s *DB) grantsIn(ctx context.Context, pk string) ([]Grant, error) {
	var ids []string
	p := dynamodb.NewQueryPaginator(s.Client(), &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table()),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list grants: %w", err)
		}
		var items []listItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("decode grant list: %w", err)
		}
		for _, it := range items {
			ids = append(ids, it.GrantID)
		}
	}
	found := map[string]Grant{}
	table := s.Table()
	for start := 0; start < len(ids); start += maxBatchGet {
		keys := []map[string]types.AttributeValue{}
		for _, id := range ids[start:min(start+maxBatchGet, len(ids))] {
			keys = append(keys, store.Key(grantPK+id, "GRANT"))
		}
		items := map[string]types.KeysAndAttributes{table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
		// Keys DynamoDB leaves unprocessed (throughput) are asked again, a
		// few times, spaced out; any still left are an error, not a
		// shorter list (an owner must see every connection to revoke it).
		for attempt := 0; len(items[table].Keys) > 0; attempt++ {
			if attempt == 4 {
				return nil, fmt.Errorf("get grants: %d left unprocessed", len(items[table].Keys))
			}
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
				}
			}
			out, err := s.Client().BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: items})
			if err != nil {
				return nil, fmt.Errorf("get %d grants: %w", len(items[table].Keys), err)
			}
			for _, item := range out.Responses[table] {
				var g grantItem
				if err := attributevalue.UnmarshalMap(item, &g); err != nil {
					return nil, fmt.Errorf("decode grant: %w", err)
				}
				found[g.ID] = g.Grant
			}
			items = out.UnprocessedKeys
		}
	}
	out := make([]Grant, 0, len(found))
	for _, id := range slices.Compact(ids) {
		if g, ok := found[id]; ok {
			out = append(out, g)
		}
	}
	return out, nil
}
