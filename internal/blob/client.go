package blob

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"genjobs/internal/awsclient"
)

// NewClient builds the S3 client of cfg, following p, at the endpoint cfg
// names for S3 (awsclient.Policy.Config). A client whose endpoint is set (a
// local S3 such as fauxqs, a bare address without bucket subdomains) uses
// path-style addresses.
func NewClient(cfg aws.Config, p awsclient.Policy) *s3.Client {
	return s3.NewFromConfig(p.Config(cfg, s3.ServiceID), func(o *s3.Options) { o.UsePathStyle = o.BaseEndpoint != nil })
}
