package accountsdb

import (
	"context"
	"fmt"
	"time"

	"genjobs/internal/store"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
