package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"genjobs/internal/blob"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newStore returns a Store on two fresh buckets, and their names.
func newStore(t *testing.T) (s *blob.Store, results, assets string) {
	t.Helper()
	results, assets = testenv.NewBucket(t), testenv.NewBucket(t)
	return blob.New(testenv.S3(t), results, assets), results, assets
}

// png is the start of a PNG file and some bytes of every value.
func png(n int) []byte {
	b := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, n)...)
	for i := range b[8:] {
		b[8+i] = byte(i)
	}
	return b
}

// fetch does a plain HTTP request, as a client without AWS credentials would.
func fetch(t *testing.T, method, rawURL string, body []byte, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.ContentLength = int64(len(body))
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// presigned parses a presigned URL and checks its lifetime and method-free
// shape; it returns the URL's query.
func presigned(t *testing.T, raw, bucket, key string, lifetime time.Duration) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/"+bucket+"/"+key {
		t.Errorf("presigned URL path %q; want /%s/%s (path-style)", u.Path, bucket, key)
	}
	q := u.Query()
	if got, want := q.Get("X-Amz-Expires"), strconv.Itoa(int(lifetime.Seconds())); got != want {
		t.Errorf("X-Amz-Expires = %q; want %s (seconds)", got, want)
	}
	if q.Get("X-Amz-Signature") == "" || q.Get("X-Amz-Credential") == "" {
		t.Errorf("URL %s is not presigned", raw)
	}
	return q
}

func TestResultRoundTripAndPresignedGet(t *testing.T) {
	s, results, _ := newStore(t)
	ctx := context.Background()
	data := png(100_000)
	key := "results/ws_a/job/0.png"
	if err := s.PutResult(ctx, key, "image/png", data); err != nil {
		t.Fatal(err)
	}
	u, err := s.ResultURL(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	presigned(t, u, results, key, time.Hour)
	status, header, body := fetch(t, "GET", u, nil, nil)
	if status != 200 || !bytes.Equal(body, data) {
		t.Fatalf("GET of the presigned URL: %d, %d bytes; want 200 and the %d bytes stored", status, len(body), len(data))
	}
	if ct := header.Get("Content-Type"); ct != "image/png" {
		t.Errorf("Content-Type %q; want image/png", ct)
	}

	if err := s.DeleteResult(ctx, key); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := fetch(t, "GET", u, nil, nil); status != 404 {
		t.Errorf("GET after DeleteResult: %d; want 404", status)
	}
	if err := s.DeleteResult(ctx, key); err != nil {
		t.Errorf("deleting a deleted result: %v", err)
	}
}

func TestAssetPutReadAndURL(t *testing.T) {
	s, _, assets := newStore(t)
	ctx := context.Background()
	data := png(1000)
	key := "assets/ws_a/ast_1"
	if err := s.PutAsset(ctx, key, "image/png", data); err != nil {
		t.Fatal(err)
	}
	got, ct, err := s.ReadAsset(ctx, key, int64(len(data)))
	if err != nil || ct != "image/png" || !bytes.Equal(got, data) {
		t.Fatalf("ReadAsset = %d bytes, %q, %v; want the %d bytes stored, image/png", len(got), ct, err, len(data))
	}
	u, err := s.AssetURL(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	presigned(t, u, assets, key, 5*time.Minute)
	if status, _, body := fetch(t, "GET", u, nil, nil); status != 200 || !bytes.Equal(body, data) {
		t.Errorf("GET of the asset URL: %d, %d bytes; want 200 and the asset", status, len(body))
	}
	// Results and assets live in separate buckets.
	if _, _, err := s.ReadAsset(ctx, "results/x", 10); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("ReadAsset of a key never written: %v; want ErrNotFound", err)
	}
}

func TestReadAssetRefusesOverMax(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	data := png(2000)
	if err := s.PutAsset(ctx, "k", "image/png", data); err != nil {
		t.Fatal(err)
	}
	for _, max := range []int64{0, 1, int64(len(data)) - 1} {
		if got, _, err := s.ReadAsset(ctx, "k", max); !errors.Is(err, blob.ErrTooLarge) || got != nil {
			t.Errorf("ReadAsset with max %d of %d bytes: %d bytes, %v; want ErrTooLarge", max, len(data), len(got), err)
		}
	}
	if got, _, err := s.ReadAsset(ctx, "k", int64(len(data))+1); err != nil || len(got) != len(data) {
		t.Errorf("ReadAsset under max: %d bytes, %v", len(got), err)
	}
}

func TestReadAssetMissing(t *testing.T) {
	s, _, _ := newStore(t)
	if _, _, err := s.ReadAsset(context.Background(), "assets/ws_a/none", 100); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("ReadAsset of a missing key: %v; want ErrNotFound", err)
	}
	// A missing bucket is a fault of the deployment, not a missing asset.
	other := blob.New(testenv.S3(t), "no-such-results", "no-such-bucket-"+strings.ToLower(t.Name()))
	if _, _, err := other.ReadAsset(context.Background(), "k", 100); err == nil || errors.Is(err, blob.ErrNotFound) {
		t.Errorf("ReadAsset on a missing bucket: %v; want an error other than ErrNotFound", err)
	}
}

func TestPresignedPutUploadsAndIsBoundToTypeAndLength(t *testing.T) {
	s, _, assets := newStore(t)
	ctx := context.Background()
	data := png(300_000)
	key := "assets/ws_a/ast_up"
	u, err := s.AssetUploadURL(ctx, key, "image/png", int64(len(data)), 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	q := presigned(t, u, assets, key, 15*time.Minute)
	// fauxqs checks no signature, so the binding is checked on the URL: S3
	// recomputes the signature over these headers and refuses other values.
	signed := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	for _, h := range []string{"content-length", "content-type", "host"} {
		if !contains(signed, h) {
			t.Errorf("X-Amz-SignedHeaders %v lacks %s", signed, h)
		}
	}

	status, _, body := fetch(t, "PUT", u, data, http.Header{"Content-Type": {"image/png"}})
	if status != 200 {
		t.Fatalf("PUT to the presigned URL: %d %s", status, body)
	}
	got, ct, err := s.ReadAsset(ctx, key, int64(len(data)))
	if err != nil || ct != "image/png" || !bytes.Equal(got, data) {
		t.Fatalf("ReadAsset after the upload: %d bytes, %q, %v; want the %d bytes uploaded", len(got), ct, err, len(data))
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestCreateBucketsIsIdempotent(t *testing.T) {
	client := testenv.S3(t)
	ctx := context.Background()
	existing := testenv.NewBucket(t)
	fresh := "b-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-createbuckets"
	t.Cleanup(func() {
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(fresh)}); err != nil {
			t.Errorf("delete bucket %s: %v", fresh, err)
		}
	})
	if err := blob.CreateBuckets(ctx, client, existing, fresh, fresh); err != nil {
		t.Fatalf("CreateBuckets: %v", err)
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(fresh)}); err != nil {
		t.Errorf("bucket %s after CreateBuckets: %v", fresh, err)
	}
}
