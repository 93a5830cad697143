package queue

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/awsclient"
)

// NewClient builds the SQS client of cfg, following p, at the endpoint cfg
// names for SQS (awsclient.Endpoint).
func NewClient(cfg aws.Config, p awsclient.Policy) *sqs.Client {
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if u := awsclient.Endpoint(cfg, sqs.ServiceID); u != "" {
			o.BaseEndpoint = aws.String(u)
		}
	}, Options(p))
}

// Options makes an SQS client follow p.
func Options(p awsclient.Policy) func(*sqs.Options) {
	return func(o *sqs.Options) {
		o.Retryer, o.RetryMaxAttempts = p.Retryer(), 0
		o.HTTPClient = p.HTTPClient(o.HTTPClient)
		o.APIOptions = p.APIOptions(o.APIOptions)
	}
}
