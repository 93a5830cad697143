package testenv

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Call is one S3 request as it went on the wire to fauxqs.
type S3Call struct {
	Op         string // CreateMultipartUpload, UploadPart, CompleteMultipartUpload, AbortMultipartUpload, PutObject, GetObject, HeadObject, DeleteObject, other
	Bucket     string
	Key        string
	UploadID   string // the multipart upload's; for CreateMultipartUpload, the one answered
	PartNumber int
	Size       int64  // the request body's length
	Body       []byte // CompleteMultipartUpload's request body only
	Status     int    // the answer's status; 0 when the request failed or was refused by Before
	ETag       string // the answer's ETag header
}

// S3Wire records the S3 requests of a client, and can hold or refuse them,
// so tests see what a multipart upload really sent.
type S3Wire struct {
	mu    sync.Mutex
	calls []S3Call
	// Before, when set, is called before each request is sent; it may
	// block (until ctx, the request's context, ends) and a non-nil error
	// answers the request 403 AccessDenied, which the SDK does not retry.
	Before func(ctx context.Context, c S3Call) error
}

// S3Recorded returns a client for the tests' fauxqs S3 whose requests are
// recorded by the returned S3Wire.
func S3Recorded(t testing.TB) (*s3.Client, *S3Wire) {
	t.Helper()
	w := &S3Wire{}
	base := S3(t)
	client := s3.New(base.Options(), func(o *s3.Options) { o.HTTPClient = &wireClient{next: o.HTTPClient, w: w} })
	return client, w
}

// Calls returns the requests so far, oldest first.
func (w *S3Wire) Calls() []S3Call {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]S3Call(nil), w.calls...)
}

// Ops returns the requests of one operation, oldest first.
func (w *S3Wire) Ops(op string) []S3Call {
	var out []S3Call
	for _, c := range w.Calls() {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

type wireClient struct {
	next s3.HTTPClient
	w    *S3Wire
}

func (c *wireClient) Do(r *http.Request) (*http.Response, error) {
	call := describe(r)
	if call.Op == "CompleteMultipartUpload" && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body.Close()
		call.Body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	if before := c.w.Before; before != nil {
		if err := before(r.Context(), call); err != nil {
			c.w.record(call)
			return refused(r), nil
		}
	}
	resp, err := c.next.Do(r)
	if err == nil {
		call.Status, call.ETag = resp.StatusCode, resp.Header.Get("ETag")
		if call.Op == "CreateMultipartUpload" && resp.StatusCode == http.StatusOK {
			call.UploadID, resp.Body, err = uploadIDOf(resp.Body)
		}
	}
	c.w.record(call)
	return resp, err
}

func (w *S3Wire) record(c S3Call) {
	w.mu.Lock()
	w.calls = append(w.calls, c)
	w.mu.Unlock()
}

// describe names a path-style request's operation the way S3's REST API
// tells them apart: by method and query.
func describe(r *http.Request) S3Call {
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	if k, err := url.PathUnescape(key); err == nil {
		key = k
	}
	q := r.URL.Query()
	c := S3Call{Bucket: bucket, Key: key, UploadID: q.Get("uploadId"), Size: r.ContentLength}
	c.PartNumber, _ = strconv.Atoi(q.Get("partNumber"))
	_, uploads := q["uploads"]
	switch {
	case r.Method == http.MethodPost && uploads:
		c.Op = "CreateMultipartUpload"
	case r.Method == http.MethodPut && c.UploadID != "":
		c.Op = "UploadPart"
	case r.Method == http.MethodPost && c.UploadID != "":
		c.Op = "CompleteMultipartUpload"
	case r.Method == http.MethodDelete && c.UploadID != "":
		c.Op = "AbortMultipartUpload"
	case key == "":
		c.Op = "other"
	case r.Method == http.MethodPut:
		c.Op = "PutObject"
	case r.Method == http.MethodGet:
		c.Op = "GetObject"
	case r.Method == http.MethodHead:
		c.Op = "HeadObject"
	case r.Method == http.MethodDelete:
		c.Op = "DeleteObject"
	default:
		c.Op = "other"
	}
	return c
}

// uploadIDOf reads the UploadId of an InitiateMultipartUploadResult and
// gives the body back unread.
func uploadIDOf(body io.ReadCloser) (string, io.ReadCloser, error) {
	b, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		return "", nil, err
	}
	id := ""
	if _, rest, ok := bytes.Cut(b, []byte("<UploadId>")); ok {
		if v, _, ok := bytes.Cut(rest, []byte("</UploadId>")); ok {
			id = string(v)
		}
	}
	return id, io.NopCloser(bytes.NewReader(b)), nil
}

func refused(r *http.Request) *http.Response {
	const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Refused by the test.</Message></Error>`
	return &http.Response{
		StatusCode: http.StatusForbidden, Status: "403 Forbidden", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/xml"}},
		Body:    io.NopCloser(strings.NewReader(body)),
		Request: r, ContentLength: int64(len(body)),
	}
}
