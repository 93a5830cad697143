// Package blob is the S3 adapter: the only code that speaks to S3. It stores
// job results and uploaded assets, each in its own bucket, and mints the
// presigned URLs through which clients read and write them without a token.
//
// Presigning is local computation (a signature over the request with the
// function's credentials); it sends nothing to S3.
package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"genjobs/internal/blob/s3url"
)

// ErrNotFound is returned for a missing object.
var ErrNotFound = errors.New("blob: not found")

// ErrTooLarge is returned by ReadAsset for an object over the caller's limit.
var ErrTooLarge = errors.New("blob: object too large")

// Lifetimes of the presigned GET URLs.
const (
	// ResultURLLifetime: result URLs are valid for 1 hour from the moment a
	// job record is read (docs/api.md, "The job record").
	ResultURLLifetime = s3url.ResultURLLifetime
	// AssetURLLifetime: the target of GET /assets/{id}'s redirect is followed
	// at once, so it lives only minutes.
	AssetURLLifetime = 5 * time.Minute
	// SharedAssetURLLifetime: an input image sent to a model provider as a
	// URL must outlive its queue and the job's deadline (at most 2 hours).
	// A URL lives no longer than its credentials are known to: with
	// Lambda's role credentials, s3url.UnknownExpiryCover (1 hour).
	SharedAssetURLLifetime = 3 * time.Hour
)

// Store reads and writes the results and assets buckets.
type Store struct {
	s3      *s3.Client
	presign *s3url.Presigner
	results string
	assets  string
}

// New returns a Store on the two buckets. It does no I/O.
func New(client *s3.Client, resultsBucket, assetsBucket string) *Store {
	o := client.Options()
	presign := s3url.NewPresigner(o.Credentials, o.Region, aws.ToString(o.BaseEndpoint))
	return &Store{s3: client, presign: presign, results: resultsBucket, assets: assetsBucket}
}

// PutResult stores a job's output file under key in the results bucket.
// A file of more than one part goes up as a multipart upload, as a
// streamed one does: fauxqs refuses requests over 11 MiB.
func (s *Store) PutResult(ctx context.Context, key, contentType string, data []byte) error {
	if len(data) <= PartSize {
		return s.put(ctx, s.results, key, contentType, data)
	}
	up := s.CreateResult(ctx, key, contentType)
	if _, err := up.Write(data); err != nil {
		return err
	}
	return up.Close()
}

// PutAttachment stores a result that is no media file (at most PartSize
// bytes) as application/octet-stream with Content-Disposition: attachment,
// so that a browser following its URL saves it rather than renders it.
func (s *Store) PutAttachment(ctx context.Context, key string, data []byte) error {
	_, err := s.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket:             aws.String(s.results),
		Key:                aws.String(key),
		Body:               bytes.NewReader(data),
		ContentType:        aws.String("application/octet-stream"),
		ContentDisposition: aws.String("attachment"),
		ContentLength:      aws.Int64(int64(len(data))),
	})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", s.results, key, err)
	}
	return nil
}

// DeleteResults removes every result whose key starts with prefix and
// returns how many it removed. Deleting what is gone is no error, so it
// may be run again after a failure.
func (s *Store) DeleteResults(ctx context.Context, prefix string) (int, error) {
	n := 0
	var token *string
	for {
		out, err := s.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.results), Prefix: aws.String(prefix), ContinuationToken: token})
		if err != nil {
			return n, fmt.Errorf("list s3://%s/%s: %w", s.results, prefix, err)
		}
		for _, o := range out.Contents {
			if err := s.DeleteResult(ctx, aws.ToString(o.Key)); err != nil {
				return n, err
			}
			n++
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return n, nil
		}
		token = out.NextContinuationToken
	}
}

// ResultURL is a presigned GET of a result, valid for ResultURLLifetime.
func (s *Store) ResultURL(ctx context.Context, key string) (string, error) {
	return s.getURL(ctx, s.results, key, ResultURLLifetime)
}

// DeleteResult removes a result. S3 answers a delete of a missing key with
// success, so deleting twice is no error.
func (s *Store) DeleteResult(ctx context.Context, key string) error {
	_, err := s.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.results), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("delete s3://%s/%s: %w", s.results, key, err)
	}
	return nil
}

// PutAsset stores an uploaded image under key in the assets bucket.
func (s *Store) PutAsset(ctx context.Context, key, contentType string, data []byte) error {
	return s.put(ctx, s.assets, key, contentType, data)
}

// AssetURL is a presigned GET of an asset, valid for AssetURLLifetime.
func (s *Store) AssetURL(ctx context.Context, key string) (string, error) {
	return s.getURL(ctx, s.assets, key, AssetURLLifetime)
}

// SharedAssetURL is a presigned GET of an asset for a model provider, which
// may start on it long after submission: valid for SharedAssetURLLifetime.
func (s *Store) SharedAssetURL(ctx context.Context, key string) (string, error) {
	return s.getURL(ctx, s.assets, key, SharedAssetURLLifetime)
}

// ReadResult reads an object of the results bucket of at most max bytes.
func (s *Store) ReadResult(ctx context.Context, key string, max int64) ([]byte, error) {
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.results), Key: aws.String(key)})
	if notFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.results, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", s.results, key, err)
	}
	if int64(len(data)) > max {
		return nil, ErrTooLarge
	}
	return data, nil
}

// AssetUploadURL is a presigned PUT of an asset, valid for expires. Its
// signature covers the Content-Type and Content-Length headers, so S3 refuses
// an upload of another type or size: the client must send exactly
// contentType and size bytes.
func (s *Store) AssetUploadURL(ctx context.Context, key, contentType string, size int64, expires time.Duration) (string, error) {
	return s.presign.PutURL(ctx, s.assets, key, contentType, size, expires)
}

// ReadAsset reads an asset and the content type it was stored with. A
// missing asset is ErrNotFound; one of more than max bytes is ErrTooLarge,
// and no more than max+1 bytes of it are read.
func (s *Store) ReadAsset(ctx context.Context, key string, max int64) (data []byte, contentType string, err error) {
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.assets), Key: aws.String(key)})
	if notFound(err) {
		return nil, "", ErrNotFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("get s3://%s/%s: %w", s.assets, key, err)
	}
	defer out.Body.Close()
	if aws.ToInt64(out.ContentLength) > max {
		return nil, "", ErrTooLarge
	}
	data, err = io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, "", fmt.Errorf("read s3://%s/%s: %w", s.assets, key, err)
	}
	if int64(len(data)) > max {
		return nil, "", ErrTooLarge
	}
	return data, aws.ToString(out.ContentType), nil
}

func (s *Store) put(ctx context.Context, bucket, key, contentType string, data []byte) error {
	_, err := s.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentType:   aws.String(contentType),
		ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", bucket, key, err)
	}
	return nil
}

func (s *Store) getURL(ctx context.Context, bucket, key string, expires time.Duration) (string, error) {
	return s.presign.GetURL(ctx, bucket, key, expires)
}

// notFound recognises a missing object: S3's typed NoSuchKey, or its code
// without the type (HEAD answers carry no body, hence "NotFound"). A missing
// bucket is not a missing object: that stays an error.
func notFound(err error) bool {
	var nsk *types.NoSuchKey
	var api smithy.APIError
	return errors.As(err, &nsk) ||
		errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound")
}

// CreateBuckets creates each bucket unless this account owns it already. The
// local stack and tests use it; in AWS the template creates the buckets.
func CreateBuckets(ctx context.Context, client *s3.Client, names ...string) error {
	for _, name := range names {
		in := &s3.CreateBucketInput{Bucket: aws.String(name)}
		// us-east-1 is the one region that takes no location constraint.
		if r := client.Options().Region; r != "" && r != "us-east-1" {
			in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
		}
		_, err := client.CreateBucket(ctx, in)
		var owned *types.BucketAlreadyOwnedByYou
		if err != nil && !errors.As(err, &owned) {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}
