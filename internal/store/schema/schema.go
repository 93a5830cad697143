// Package schema is the table's definition (keys, indexes and their
// projections, the stream) for the local stack and the tests, which create
// the table themselves; in AWS template.yaml creates it, and a test holds
// the two equal. The functions never link it.
package schema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/store"
)

// styleSetAttributes are projected into styles-by-set: the immutable
// fields a query's user, model and ids parameters are checked on before
// the style is read (stylesdb.DB.ListStyles).
var styleSetAttributes = []string{"style_id", "owner_id", "models"}

// jobListAttributes are projected into jobs-by-workspace: what a job list
// shows, without the stored request, which may be 64 KiB.
var jobListAttributes = []string{
	"job_id", "workspace_id", "status", "created_at", "completed_at",
	"result", "error_code", "error_message", "progress",
}

// TableInput is the table's definition: streams carry new and old images for
// the webhook function, billing is on demand.
func TableInput(name string) *dynamodb.CreateTableInput {
	s := types.ScalarAttributeTypeS
	key := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
		}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: s},
			{AttributeName: aws.String("SK"), AttributeType: s},
			{AttributeName: aws.String("GSI1PK"), AttributeType: s},
			{AttributeName: aws.String("GSI1SK"), AttributeType: s},
			{AttributeName: aws.String("GSI2PK"), AttributeType: s},
			{AttributeName: aws.String("GSI2SK"), AttributeType: s},
			{AttributeName: aws.String("GSI3PK"), AttributeType: s},
			{AttributeName: aws.String("GSI3SK"), AttributeType: s},
			{AttributeName: aws.String("GSI4PK"), AttributeType: s},
			{AttributeName: aws.String("GSI4SK"), AttributeType: s},
			{AttributeName: aws.String("GSI5PK"), AttributeType: s},
			{AttributeName: aws.String("GSI5SK"), AttributeType: s},
		},
		KeySchema: key("PK", "SK"),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{
				IndexName: aws.String(store.IndexJobsByWorkspace),
				KeySchema: key("GSI1PK", "GSI1SK"),
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: jobListAttributes,
				},
			},
			{
				IndexName: aws.String(store.IndexJobsByStatus),
				KeySchema: key("GSI2PK", "GSI2SK"),
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: []string{"job_id", "workspace_id", "status", "updated_at"},
				},
			},
			{
				IndexName: aws.String(store.IndexStylesBySet),
				KeySchema: key("GSI3PK", "GSI3SK"),
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: styleSetAttributes,
				},
			},
			{
				IndexName: aws.String(store.IndexDeliveriesDue),
				KeySchema: key("GSI4PK", "GSI4SK"),
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: []string{"job_id"},
				},
			},
			{
				IndexName:  aws.String(store.IndexJobsByFilter),
				KeySchema:  key("GSI5PK", "GSI5SK"),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			},
		},
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	}
}

// CreateTable creates the table unless it exists, and waits until it is
// active. The local stack and tests use it; in AWS the template creates it.
func CreateTable(ctx context.Context, db *dynamodb.Client, name string) error {
	_, err := db.CreateTable(ctx, TableInput(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	return nil
}
