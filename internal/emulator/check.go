package emulator

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CheckDynamoDB proves db reaches a working DynamoDB: it creates table
// (a new name), writes an item and reads it back with a consistent read.
// The tests of the emulators and of the tests' environment use it.
func CheckDynamoDB(ctx context.Context, db *dynamodb.Client, table string) error {
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		return err
	}
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "job-1"}}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": key["pk"], "status": &types.AttributeValueMemberS{Value: "queued"},
	}}); err != nil {
		return err
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return err
	}
	if s, ok := out.Item["status"].(*types.AttributeValueMemberS); !ok || s.Value != "queued" {
		return fmt.Errorf("GetItem of the item just written = %v", out.Item)
	}
	return nil
}
