package blob

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"genjobs/internal/awsclient"
)

// NewClient builds the S3 client of cfg, following p, at the endpoint cfg
// names for S3 (awsclient.Endpoint). A client whose
// endpoint is set (a local S3 such as fauxqs, a bare address without bucket
// subdomains) uses path-style addresses.
func NewClient(cfg aws.Config, p awsclient.Policy) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if u := awsclient.Endpoint(cfg, s3.ServiceID); u != "" {
			o.BaseEndpoint = aws.String(u)
		}
	}, Options(p))
}

// Options makes an S3 client follow p.
func Options(p awsclient.Policy) func(*s3.Options) {
	return func(o *s3.Options) {
		o.UsePathStyle = o.BaseEndpoint != nil
		o.Retryer, o.RetryMaxAttempts = p.Retryer(), 0
		o.HTTPClient = p.HTTPClient(o.HTTPClient)
		o.APIOptions = p.APIOptions(o.APIOptions)
	}
}
