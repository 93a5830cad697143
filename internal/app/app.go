// Package app wires each function: configuration from the environment,
// adapters built once, handlers on top. functions/*/main.go, the local
// runner and the tests all build their handlers through Function.Handler,
// so that what runs locally is what runs in Lambda.
//
// This package holds what every function shares: Config and Deps (the
// settings by area), Function (a builder, whose kind sets its retries and
// its margin), Start and Lambda.
// Each function's builder, Build, is in a package of its own named after its
// functions/ directory (internal/app/<name>fn); the adapters several
// builders share are made by packages of constructors, one per AWS client
// (dynamodbwire, sqswire, s3wire, kmswire) and one for the model providers
// (providerwire). A binary links every package its builder imports and runs
// their init, so a function that never sends to SQS imports no package that
// does. docs/architecture.md, "Wiring", follows a job through them.
package app

import (
	"net/http"
	"os"

	"genjobs/internal/awsclient"
	"genjobs/internal/blob/s3url"
)

// FromEnv reads the configuration and the AWS configuration from the
// environment. It builds no client and does no I/O: each builder makes the
// clients its function uses.
func FromEnv() (Deps, error) {
	d, err := Config(os.Getenv)
	if err != nil {
		return d, err
	}
	d.AWS = awsclient.FromEnv(os.Getenv)
	return d, nil
}

// AssetPuts stores uploaded assets by presigned PUTs, without the S3
// client (package s3url), for the console's playground, which stores an
// upload now and then through POST /assets's handler.
func (d Deps) AssetPuts() s3url.AssetPuts {
	var hc s3url.Doer = http.DefaultClient
	if d.AWS.HTTPClient != nil {
		hc = d.Retries.S3.HTTPClient(d.AWS.HTTPClient)
	}
	return s3url.AssetPuts{Presigner: s3url.NewPresigner(d.AWS.Credentials, d.AWS.Region, awsclient.Endpoint(d.AWS, "S3")),
		Bucket: d.Buckets.Assets, HTTP: hc}
}

// ResultLinks mints result URLs without the S3 client, for the functions
// that only hand them out (package s3url): they link no S3 package.
func (d Deps) ResultLinks() s3url.ResultLinks {
	return s3url.NewResultLinks(s3url.NewPresigner(d.AWS.Credentials, d.AWS.Region, awsclient.Endpoint(d.AWS, "S3")), d.Buckets.Results)
}
