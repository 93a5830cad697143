// Package s3wire builds the S3 adapter that the function builders share:
// constructors only. It links the S3 client and no other AWS client.
package s3wire

import (
	"genjobs/internal/app"
	"genjobs/internal/blob"
)

// Store is the S3 adapter, on an S3 client of its own that follows d's
// profile: build it once per function.
func Store(d app.Deps) *blob.Store {
	return blob.New(blob.NewClient(d.AWS, d.Retries.S3), d.Buckets.Results, d.Buckets.Assets)
}
