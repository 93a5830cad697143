// Command bare is the cold-start baseline of `make bench`: it builds the same
// SDK clients every function builds at init (default config, DynamoDB, SQS)
// and serves a trivial handler, with none of our code. The difference between
// a function and bare in the bench table is what our code adds on top of the
// SDK.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// clients holds what init built, as a function would; the handler reads it
// so that the clients are part of the program, not dead code.
type clients struct {
	db *dynamodb.Client
	q  *sqs.Client
}

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
	c := clients{db: dynamodb.NewFromConfig(cfg), q: sqs.NewFromConfig(cfg)}
	lambda.Start(func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ready := c.db != nil && c.q != nil
		return events.APIGatewayV2HTTPResponse{
			StatusCode: 200,
			Headers:    map[string]string{"Content-Type": "application/json"},
			Body:       fmt.Sprintf(`{"path":%q,"ready":%t}`, ev.RawPath, ready),
		}, nil
	})
}
