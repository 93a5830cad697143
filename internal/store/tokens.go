package store

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
)

// Tokens lists a workspace's tokens, revoked ones included, newest first:
// the items under the workspace (WS#<ws> / TOKEN#<id>), which hold the
// last use too.
func (s *Store) Tokens(ctx context.Context, ws string) ([]auth.Token, error) {
	var out []auth.Token
	err := s.queryPrefix(ctx, workspacePK(ws), "TOKEN#", func(item map[string]types.AttributeValue) error {
		var it tokenItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return err
		}
		out = append(out, it.token())
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, err
}

// RecordTokenUse writes the hour of at as the token's last use, on the
// item under its workspace, unless that hour (or a later one) is recorded
// already: a conditional update, so that however many function instances
// race, the item is written at most once an hour. written is false when the
// condition held it back, or the token is gone.
func (s *Store) RecordTokenUse(ctx context.Context, ws, tokenID string, at time.Time) (written bool, err error) {
	hour := stamp(at.UTC().Truncate(time.Hour))
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(workspacePK(ws), "TOKEN#"+tokenID),
		UpdateExpression:          aws.String("SET last_used_at = :hour"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND (attribute_not_exists(last_used_at) OR last_used_at < :hour)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":hour": str(hour)},
	})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record use of token %s: %w", tokenID, err)
	}
	return true, nil
}
