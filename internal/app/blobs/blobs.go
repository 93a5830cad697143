// Package blobs wires the S3 adapter, and the function that uses it with
// the table alone: assets. It links the S3 client.
package blobs

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/tables"
	"genjobs/internal/awsclient"
	"genjobs/internal/blob"
	"genjobs/internal/httpapi"
)

// Store is the S3 adapter, on an S3 client of its own that follows d's
// profile: build it once per function.
func Store(d app.Deps) *blob.Store {
	return blob.New(blob.NewClient(d.AWS, d.Retries.S3), d.ResultsBucket, d.AssetsBucket)
}

// Assets builds the assets function's handler.
func Assets(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"TABLE_NAME": d.Table, "ASSETS_BUCKET": d.AssetsBucket}); err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Requests)
	st := tables.Store(d)
	h := &httpapi.Assets{Auth: tables.Authenticator(d, st), Assets: st, Blobs: Store(d), Clock: d.Clock, BaseURL: d.BaseURL}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}
