package s3url

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Doer sends an HTTP request (aws.Config's HTTPClient, *http.Client).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// AssetPuts stores assets by a presigned PUT over plain HTTP: POST
// /assets's store (httpapi.Blobs) for a function that stores an upload now
// and then (the console's playground) without linking the S3 client, about
// 2.4 MB of its binary. It stores only: it hands out no URL.
type AssetPuts struct {
	Presigner *Presigner
	Bucket    string
	HTTP      Doer
}

// putLifetime is how long a PUT's URL is signed for: it is used at once.
const putLifetime = 5 * time.Minute

// PutAsset stores data under key in the assets bucket.
func (a AssetPuts) PutAsset(ctx context.Context, key, contentType string, data []byte) error {
	u, err := a.Presigner.PutURL(ctx, a.Bucket, key, contentType, int64(len(data)), putLifetime)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.ContentLength = int64(len(data))
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", a.Bucket, key, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("put s3://%s/%s: %s: %s", a.Bucket, key, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// errNoURLs refuses what AssetPuts does not do.
var errNoURLs = errors.New("s3url: AssetPuts stores assets and hands out no URL")

// AssetURL is not served: AssetPuts only stores.
func (a AssetPuts) AssetURL(context.Context, string) (string, error) { return "", errNoURLs }

// AssetUploadURL is not served: AssetPuts only stores.
func (a AssetPuts) AssetUploadURL(context.Context, string, string, int64, time.Duration) (string, error) {
	return "", errNoURLs
}
