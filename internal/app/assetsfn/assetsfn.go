// Package assetsfn wires the assets function: POST /assets and the
// workspace's uploaded inputs.
package assetsfn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/s3wire"
	"genjobs/internal/httpapi"
	"genjobs/internal/store/assetsdb"
)

// Build builds the assets function's handler.
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "ASSETS_BUCKET": d.Buckets.Assets,
	}); err != nil {
		return nil, err
	}
	st, auth := dynamodbwire.API(d)
	h := &httpapi.Assets{Auth: auth, Assets: assetsdb.New(st), Blobs: s3wire.Store(d), Clock: d.Clock, BaseURL: d.API.BaseURL}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}
