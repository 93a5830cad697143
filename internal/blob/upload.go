package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// PartSize is the size of every part of a multipart upload but the last.
// S3 wants at least 5 MiB; fauxqs refuses requests over 11 MiB. An upload
// holds at most two parts in memory: one going up, one filling.
const PartSize = 8 << 20

// maxParts is S3's limit on the parts of one upload (78 GiB at PartSize).
const maxParts = 10000

// abortTimeout bounds the AbortMultipartUpload of a failed upload, sent on
// a context of its own since the caller's may be the reason it failed.
const abortTimeout = 10 * time.Second

// ErrAborted is returned by the writes of an upload after its Abort.
var ErrAborted = errors.New("blob: upload aborted")

// Upload writes one result object as it is produced: each PartSize bytes
// go up as one part of a multipart upload while the next part fills, and
// Close completes it. A file smaller than one part goes up with a single
// PutObject at Close. The first failure of a request is returned by every
// later Write and Close, and the multipart upload is aborted then, so none
// is left behind; Abort does the same for a file the caller gives up.
//
// Write and Close are for one goroutine; Abort may come from another.
type Upload struct {
	client                   *s3.Client
	bucket, key, contentType string
	parent                   context.Context // for the abort of a failure
	ctx                      context.Context // every request but the abort
	cancel                   context.CancelFunc

	mu       sync.Mutex
	buf      []byte // the part filling
	spare    []byte // the buffer of the last part sent, reused for the next
	id       string // the multipart upload's, once the first part is sent
	parts    []types.CompletedPart
	inFlight *part // the part going up, if any
	err      error // the first failure, or ErrAborted
	done     bool  // completed, failed or aborted: nothing more is sent
}

// part is one UploadPart request in flight.
type part struct {
	done chan struct{}
	buf  []byte
	out  types.CompletedPart
	err  error
}

// CreateResult starts the upload of a result under key. It sends nothing
// until the first part is full or Close; requests run on ctx, so that its
// end (a cancelled job) fails the upload's next Write or Close.
func (s *Store) CreateResult(ctx context.Context, key, contentType string) *Upload {
	uctx, cancel := context.WithCancel(ctx)
	return &Upload{client: s.s3, bucket: s.results, key: key, contentType: contentType,
		parent: ctx, ctx: uctx, cancel: cancel}
}

// Write buffers p and sends each full part. It blocks only while the part
// before the one it has filled is still going up.
func (u *Upload) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.usable(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), PartSize-len(u.buf))
		u.grow(k)
		u.buf = append(u.buf, p[:k]...)
		p, n = p[k:], n+k
		if len(u.buf) == PartSize {
			if err := u.send(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Close sends what is buffered and completes the object. On failure
// nothing remains in the bucket under the key's upload.
func (u *Upload) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.usable(); err != nil {
		return err
	}
	if u.id == "" { // never reached a full part: one request
		_, err := u.client.PutObject(u.ctx, &s3.PutObjectInput{
			Bucket: aws.String(u.bucket), Key: aws.String(u.key), ContentType: aws.String(u.contentType),
			Body: bytes.NewReader(u.buf), ContentLength: aws.Int64(int64(len(u.buf))),
		})
		if err != nil {
			return u.fail(fmt.Errorf("put s3://%s/%s: %w", u.bucket, u.key, err))
		}
		u.finish()
		return nil
	}
	if len(u.buf) > 0 {
		if err := u.send(); err != nil {
			return err
		}
	}
	if err := u.wait(); err != nil {
		return err
	}
	_, err := u.client.CompleteMultipartUpload(u.ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(u.bucket), Key: aws.String(u.key), UploadId: aws.String(u.id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts},
	})
	if err != nil {
		return u.fail(fmt.Errorf("complete s3://%s/%s: %w", u.bucket, u.key, err))
	}
	u.finish()
	return nil
}

// Abort gives the upload up: a part in flight is stopped, the multipart
// upload and its parts are deleted, and later writes fail with ErrAborted.
// It is a no-op on an upload already completed (Close returned nil: delete
// the object instead), failed or aborted, and on one that sent nothing.
func (u *Upload) Abort(ctx context.Context) error {
	u.cancel() // before the lock: a Write waiting on a part gives way
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return nil
	}
	_ = u.wait() // a part still going up could outlive the abort
	u.err, u.done, u.buf, u.spare = ErrAborted, true, nil, nil
	return u.abort(ctx)
}

func (u *Upload) usable() error {
	if u.err != nil {
		return u.err
	}
	if u.done {
		return errors.New("blob: write to a closed upload")
	}
	return nil
}

// grow makes room for n more bytes in the part filling, never past
// PartSize: a small file takes little memory, a large one two parts.
func (u *Upload) grow(n int) {
	need := len(u.buf) + n
	if need <= cap(u.buf) {
		return
	}
	if u.buf == nil && u.spare != nil {
		u.buf, u.spare = u.spare[:0], nil
		return
	}
	c := min(max(2*cap(u.buf), need, 64<<10), PartSize)
	if u.id != "" || u.inFlight != nil {
		c = PartSize // a multipart upload fills whole parts
	}
	b := make([]byte, len(u.buf), c)
	copy(b, u.buf)
	u.buf = b
}

// send starts the multipart upload if needed, waits for the part in
// flight, and sends the buffered one in the background.
func (u *Upload) send() error {
	if err := u.wait(); err != nil {
		return err
	}
	if u.id == "" {
		out, err := u.client.CreateMultipartUpload(u.ctx, &s3.CreateMultipartUploadInput{
			Bucket: aws.String(u.bucket), Key: aws.String(u.key), ContentType: aws.String(u.contentType),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			return u.fail(fmt.Errorf("create multipart upload s3://%s/%s: %w", u.bucket, u.key, err))
		}
		u.id = aws.ToString(out.UploadId)
	}
	num := int32(len(u.parts) + 1)
	if num > maxParts {
		return u.fail(fmt.Errorf("s3://%s/%s: more than %d parts", u.bucket, u.key, maxParts))
	}
	p := &part{done: make(chan struct{}), buf: u.buf}
	u.buf, u.inFlight = nil, p
	go func() {
		defer close(p.done)
		out, err := u.client.UploadPart(u.ctx, &s3.UploadPartInput{
			Bucket: aws.String(u.bucket), Key: aws.String(u.key), UploadId: aws.String(u.id),
			PartNumber: aws.Int32(num), Body: bytes.NewReader(p.buf), ContentLength: aws.Int64(int64(len(p.buf))),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			p.err = fmt.Errorf("upload part %d of s3://%s/%s: %w", num, u.bucket, u.key, err)
			return
		}
		p.out = types.CompletedPart{PartNumber: aws.Int32(num), ETag: bareETag(out.ETag), ChecksumCRC32: out.ChecksumCRC32}
	}()
	return nil
}

// wait waits for the part in flight and records it; its buffer becomes
// the spare.
func (u *Upload) wait() error {
	p := u.inFlight
	if p == nil {
		return nil
	}
	<-p.done
	u.inFlight = nil
	if p.err != nil {
		return u.fail(p.err)
	}
	u.parts = append(u.parts, p.out)
	u.spare = p.buf
	return nil
}

// fail records the first failure and aborts the multipart upload on a
// context of its own: the caller's may be the one that ended.
func (u *Upload) fail(err error) error {
	if u.err == nil {
		u.err = err
	}
	if u.done {
		return u.err
	}
	u.cancel()
	if p := u.inFlight; p != nil {
		<-p.done
		u.inFlight = nil
	}
	u.done, u.buf, u.spare = true, nil, nil
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.parent), abortTimeout)
	defer cancel()
	if aerr := u.abort(ctx); aerr != nil {
		u.err = fmt.Errorf("%w (and %w)", u.err, aerr)
	}
	return u.err
}

func (u *Upload) finish() {
	u.done, u.buf, u.spare = true, nil, nil
	u.cancel()
}

// abort deletes the multipart upload, if one was started. S3 answers
// NoSuchUpload for one already gone, which is what was asked.
func (u *Upload) abort(ctx context.Context) error {
	if u.id == "" {
		return nil
	}
	_, err := u.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(u.bucket), Key: aws.String(u.key), UploadId: aws.String(u.id),
	})
	var api smithy.APIError
	if err != nil && !(errors.As(err, &api) && api.ErrorCode() == "NoSuchUpload") {
		return fmt.Errorf("abort multipart upload s3://%s/%s: %w", u.bucket, u.key, err)
	}
	return nil
}

// bareETag drops the quotes around an ETag for CompleteMultipartUpload.
// S3 matches part ETags with or without them (minio-go has always sent
// them bare), while Go's encoding/xml writes the quotes as &#34;, which
// fauxqs does not decode and answers InvalidPart.
func bareETag(etag *string) *string {
	return aws.String(strings.Trim(aws.ToString(etag), `"`))
}
