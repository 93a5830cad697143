// Package store is the DynamoDB adapter: the only code that speaks to the
// table. One table holds every entity, keyed by PK and SK:
//
//	entity       PK                 SK                    indexes
//	job          JOB#<job id>       JOB                   jobs-by-workspace (GSI1), jobs-by-status (GSI2, non-terminal only)
//	workspace    WS#<ws id>         WS                    (balance and limits live on it: one conditional write)
//	token        TOKEN#<sha256>     TOKEN                 (the lookup of every request)
//	token index  WS#<ws id>         TOKEN#<token id>      (revocation by id)
//	payment      WS#<ws id>         PAYMENT#<payment id>  (top-up idempotency)
//	ledger       WS#<ws id>         LEDGER#<time>#<id>    (every balance movement)
//	asset        ASSET#<asset id>   ASSET                 (an uploaded image's record; its bytes are in S3)
//	delivery     JOB#<job id>       WEBHOOK               deliveries-due (GSI4, pending only: DUE#<shard> / <next attempt>#<job id>)
//
// Later entities (styles, deliveries) add key prefixes and indexes.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Index names; template.yaml declares the same (a test compares them).
const (
	IndexJobsByWorkspace = "jobs-by-workspace"
	IndexJobsByStatus    = "jobs-by-status"
	IndexStylesBySet     = "styles-by-set"  // styles.go
	IndexDeliveriesDue   = "deliveries-due" // deliveries.go: pending webhook deliveries by due time
)

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
		},
		KeySchema: key("PK", "SK"),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{
				IndexName: aws.String(IndexJobsByWorkspace),
				KeySchema: key("GSI1PK", "GSI1SK"),
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: jobListAttributes,
				},
			},
			{
				IndexName: aws.String(IndexJobsByStatus),
				KeySchema: key("GSI2PK", "GSI2SK"),
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: []string{"job_id", "workspace_id", "status", "updated_at"},
				},
			},
			{
				IndexName: aws.String(IndexStylesBySet),
				KeySchema: key("GSI3PK", "GSI3SK"),
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: styleSetAttributes,
				},
			},
			{
				IndexName: aws.String(IndexDeliveriesDue),
				KeySchema: key("GSI4PK", "GSI4SK"),
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: []string{"job_id"},
				},
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
