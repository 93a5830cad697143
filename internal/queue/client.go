package queue

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/awsclient"
)

// NewClient builds the SQS client of cfg, following p, at the endpoint cfg
// names for SQS (awsclient.Policy.Config).
func NewClient(cfg aws.Config, p awsclient.Policy) *sqs.Client {
	return sqs.NewFromConfig(p.Config(cfg, sqs.ServiceID))
}
