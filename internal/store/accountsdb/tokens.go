package accountsdb

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/auth"
	"genjobs/internal/store"
)

// RecordTokenUse writes the hour of at as the token's last use, on the
// item under its workspace, unless that hour (or a later one) is recorded
// already: a conditional update, so that however many function instances
// race, the item is written at most once an hour. written is false when the
// condition held it back, or the token is gone.
func (s *DB) RecordTokenUse(ctx context.Context, ws, tokenID string, at time.Time) (written bool, err error) {
	hour := store.Stamp(at.UTC().Truncate(time.Hour))
	_, err = s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(store.WorkspacePK(ws), "TOKEN#"+tokenID),
		UpdateExpression:          aws.String("SET last_used_at = :hour"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND (attribute_not_exists(last_used_at) OR last_used_at < :hour)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":hour": store.String(hour)},
	})
	if store.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record use of token %s: %w", tokenID, err)
	}
	return true, nil
}

// Tokens lists a workspace's tokens, revoked ones included, newest first,
// with their last use (the items under the workspace; no hash).
func (s *DB) Tokens(ctx context.Context, ws string) ([]auth.Token, error) {
	var out []auth.Token
	err := s.QueryPrefix(ctx, store.WorkspacePK(ws), "TOKEN#", func(item map[string]types.AttributeValue) error {
		var it tokenItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return err
		}
		t := it.token()
		t.WorkspaceID, t.Hash = ws, ""
		out = append(out, t)
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, err
}
