package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"genjobs/internal/blob"
	"genjobs/internal/testenv"
)

// recordedStore is a Store whose S3 requests are recorded.
func recordedStore(t *testing.T) (*blob.Store, *s3.Client, *testenv.S3Wire, string) {
	t.Helper()
	client, wire := testenv.S3Recorded(t)
	results := testenv.NewBucket(t)
	return blob.New(client, results, testenv.NewBucket(t)), client, wire, results
}

// noise is n bytes that do not compress or repeat.
func noise(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeInPieces writes data in pieces of uneven sizes, as an encoder does.
func writeInPieces(t *testing.T, w io.Writer, data []byte) {
	t.Helper()
	sizes := []int{1, 4093, 65536, 1 << 20, 3<<20 + 17}
	for i := 0; len(data) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(data))
		if k, err := w.Write(data[:n]); err != nil || k != n {
			t.Fatalf("write of %d bytes: %d, %v", n, k, err)
		}
		data = data[n:]
	}
}

func getObject(t *testing.T, client *s3.Client, bucket, key string) ([]byte, *s3.GetObjectOutput) {
	t.Helper()
	out, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, out
}

func objectExists(t *testing.T, client *s3.Client, bucket, key string) bool {
	t.Helper()
	_, err := client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "NotFound" {
		return false
	}
	if err != nil {
		t.Fatalf("head s3://%s/%s: %v", bucket, key, err)
	}
	return true
}

// uploadGone checks that a multipart upload no longer exists: fauxqs has no
// ListMultipartUploads (its GET ?uploads lists objects), so a part is sent
// to it and must be refused with NoSuchUpload.
func uploadGone(t *testing.T, client *s3.Client, bucket, key, id string) {
	t.Helper()
	_, err := client.UploadPart(context.Background(), &s3.UploadPartInput{
		Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(id),
		PartNumber: aws.Int32(1), Body: strings.NewReader("late"), ContentLength: aws.Int64(4),
	})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "NoSuchUpload" {
		t.Errorf("a part sent to upload %s after it ended: %v; want NoSuchUpload", id, err)
	}
}

func TestALargeResultGoesUpInPartsAndReadsBackWhole(t *testing.T) {
	s, client, wire, results := recordedStore(t)
	data := noise(3*blob.PartSize + 1<<20 + 5) // four parts, the last small
	const key = "results/job/0.jpg"
	up := s.CreateResult(context.Background(), key, "image/jpeg")
	writeInPieces(t, up, data)
	if err := up.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	got, out := getObject(t, client, results, key)
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
	}
	if ct := aws.ToString(out.ContentType); ct != "image/jpeg" {
		t.Errorf("Content-Type %q; want image/jpeg", ct)
	}
	// S3 (and fauxqs) give a multipart object the ETag "<md5 of the
	// parts' md5s>-<number of parts>".
	if etag := aws.ToString(out.ETag); !strings.HasSuffix(strings.Trim(etag, `"`), "-4") {
		t.Errorf("ETag %s; want one of a 4-part upload", etag)
	}
	parts := wire.Ops("UploadPart")
	if len(parts) != 4 || len(wire.Ops("CreateMultipartUpload")) != 1 || len(wire.Ops("PutObject")) != 0 {
		t.Fatalf("requests %+v; want one multipart upload of 4 parts", wire.Calls())
	}
	for i, p := range parts {
		want := int64(blob.PartSize)
		if i == 3 {
			want = int64(len(data) - 3*blob.PartSize)
		}
		if p.PartNumber != i+1 || p.Size != want || p.Status != 200 {
			t.Errorf("part %d: %+v; want number %d, %d bytes, 200", i, p, i+1, want)
		}
	}
	// Go's encoding/xml writes quotes as &#34;, which fauxqs cannot read:
	// the ETags are sent bare, which S3 accepts too.
	complete := wire.Ops("CompleteMultipartUpload")
	if len(complete) != 1 || complete[0].Status != 200 {
		t.Fatalf("CompleteMultipartUpload: %+v", complete)
	}
	body := string(complete[0].Body)
	for _, p := range parts {
		if !strings.Contains(body, "<ETag>"+strings.Trim(p.ETag, `"`)+"</ETag>") {
			t.Errorf("Complete body %s lacks part %d's ETag %s, bare", body, p.PartNumber, p.ETag)
		}
	}
}

func TestAResultOfWholePartsSendsNoEmptyPart(t *testing.T) {
	s, client, wire, results := recordedStore(t)
	data := noise(2 * blob.PartSize)
	up := s.CreateResult(context.Background(), "results/job/0.png", "image/png")
	writeInPieces(t, up, data)
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := getObject(t, client, results, "results/job/0.png"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
	}
	if n := len(wire.Ops("UploadPart")); n != 2 {
		t.Errorf("%d parts sent; want 2", n)
	}
}

func TestASmallResultIsOnePut(t *testing.T) {
	s, client, wire, results := recordedStore(t)
	for name, data := range map[string][]byte{"small": noise(300_000), "one byte short of a part": noise(blob.PartSize - 1), "empty": {}} {
		key := "results/job/" + strings.ReplaceAll(name, " ", "-")
		up := s.CreateResult(context.Background(), key, "image/webp")
		writeInPieces(t, up, data)
		if err := up.Close(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, out := getObject(t, client, results, key)
		if !bytes.Equal(got, data) || aws.ToString(out.ContentType) != "image/webp" {
			t.Errorf("%s: read back %d bytes of %s; want the %d written, image/webp", name, len(got), aws.ToString(out.ContentType), len(data))
		}
	}
	if n := len(wire.Ops("CreateMultipartUpload")); n != 0 || len(wire.Ops("PutObject")) != 3 {
		t.Errorf("requests %+v; want one PutObject per file and no multipart upload", wire.Calls())
	}
}

func TestAPartFillsWhileThePreviousGoesUp(t *testing.T) {
	s, _, wire, _ := recordedStore(t)
	release := make(chan struct{})
	var mu sync.Mutex
	inFlight := 0
	var concurrent []int // for each part, how many others were in flight as it was sent
	wire.Before = func(ctx context.Context, c testenv.S3Call) error {
		if c.Op != "UploadPart" {
			return nil
		}
		mu.Lock()
		concurrent = append(concurrent, inFlight)
		inFlight++
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		if c.PartNumber == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}
	up := s.CreateResult(context.Background(), "results/job/0.jpg", "image/jpeg")
	data := noise(3 * blob.PartSize)
	// Part 1 is held at S3; part 2 is filled all the same, up to its last
	// byte (which sends it, and so waits for part 1).
	filled := make(chan error, 1)
	go func() {
		_, err := up.Write(data[:2*blob.PartSize-1])
		filled <- err
	}()
	select {
	case err := <-filled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the writer was stalled by the part going up: it could not fill the next one")
	}
	close(release)
	if _, err := up.Write(data[2*blob.PartSize-1:]); err != nil {
		t.Fatal(err)
	}
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, n := range concurrent {
		if n != 0 {
			t.Errorf("part %d was sent while %d other(s) were in flight; want one at a time (two part buffers at most)", i+1, n)
		}
	}
	if len(concurrent) != 3 {
		t.Errorf("%d parts sent; want 3", len(concurrent))
	}
}

func TestAFailedPartFailsTheNextWriteAndAbortsTheUpload(t *testing.T) {
	s, client, wire, results := recordedStore(t)
	wire.Before = func(_ context.Context, c testenv.S3Call) error {
		if c.Op == "UploadPart" && c.PartNumber == 2 {
			return errors.New("refused")
		}
		return nil
	}
	const key = "results/job/0.jpg"
	up := s.CreateResult(context.Background(), key, "image/jpeg")
	var err error
	for i := 0; i < 5 && err == nil; i++ { // part 2 fails; a later write or Close says so
		_, err = up.Write(noise(blob.PartSize))
	}
	if err == nil {
		err = up.Close()
	}
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "AccessDenied" {
		t.Fatalf("writes after a refused part: %v; want the refusal", err)
	}
	if _, again := up.Write([]byte("x")); again == nil || up.Close() == nil {
		t.Errorf("the upload takes writes after its failure")
	}
	aborts := wire.Ops("AbortMultipartUpload")
	created := wire.Ops("CreateMultipartUpload")
	if len(created) != 1 || len(aborts) != 1 || aborts[0].UploadID != created[0].UploadID || aborts[0].Status/100 != 2 {
		t.Fatalf("created %+v, aborted %+v; want the upload aborted", created, aborts)
	}
	uploadGone(t, client, results, key, created[0].UploadID)
	if objectExists(t, client, results, key) {
		t.Errorf("an object exists after the failed upload")
	}
	if n := len(wire.Ops("CompleteMultipartUpload")); n != 0 {
		t.Errorf("%d CompleteMultipartUpload sent for a failed upload", n)
	}
}

func TestAbortRemovesTheUploadAndItsParts(t *testing.T) {
	s, client, wire, results := recordedStore(t)
	const key = "results/job/0.png"
	up := s.CreateResult(context.Background(), key, "image/png")
	writeInPieces(t, up, noise(2*blob.PartSize+100))
	if err := up.Abort(context.Background()); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if _, err := up.Write([]byte("x")); !errors.Is(err, blob.ErrAborted) {
		t.Errorf("Write after Abort: %v; want ErrAborted", err)
	}
	if err := up.Close(); !errors.Is(err, blob.ErrAborted) {
		t.Errorf("Close after Abort: %v; want ErrAborted", err)
	}
	if err := up.Abort(context.Background()); err != nil {
		t.Errorf("a second Abort: %v", err)
	}
	created := wire.Ops("CreateMultipartUpload")
	if len(created) != 1 {
		t.Fatalf("CreateMultipartUpload sent %d times", len(created))
	}
	uploadGone(t, client, results, key, created[0].UploadID)
	if objectExists(t, client, results, key) {
		t.Errorf("an object exists after Abort")
	}

	// An upload that sent nothing has nothing to abort; one completed is
	// left alone.
	small := s.CreateResult(context.Background(), "results/job/1.png", "image/png")
	writeInPieces(t, small, noise(1000))
	if err := small.Abort(context.Background()); err != nil {
		t.Errorf("Abort of an upload that sent nothing: %v", err)
	}
	done := s.CreateResult(context.Background(), "results/job/2.png", "image/png")
	writeInPieces(t, done, noise(1000))
	if err := done.Close(); err != nil {
		t.Fatal(err)
	}
	if err := done.Abort(context.Background()); err != nil || !objectExists(t, client, results, "results/job/2.png") {
		t.Errorf("Abort after Close: %v; want the object kept", err)
	}
	if objectExists(t, client, results, "results/job/1.png") {
		t.Errorf("the aborted small upload was stored")
	}
}

func TestACancelledContextFailsTheUploadAndAbortsIt(t *testing.T) {
	s, client, wire, results := recordedStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan struct{})
	wire.Before = func(rctx context.Context, c testenv.S3Call) error {
		if c.Op == "UploadPart" && c.PartNumber == 2 {
			close(held)
			<-rctx.Done() // S3 is slow; the job is cancelled meanwhile
		}
		return nil
	}
	const key = "results/job/0.jpg"
	up := s.CreateResult(ctx, key, "image/jpeg")
	errs := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 10 && err == nil; i++ {
			_, err = up.Write(noise(blob.PartSize))
		}
		errs <- err
	}()
	<-held
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("writes after the context ended: %v; want context.Canceled", err)
	}
	created := wire.Ops("CreateMultipartUpload")
	if len(created) != 1 || len(wire.Ops("AbortMultipartUpload")) != 1 {
		t.Fatalf("requests %+v; want the upload aborted despite the cancelled context", wire.Calls())
	}
	uploadGone(t, client, results, key, created[0].UploadID)
}

func TestPutResultOfMoreThanAPartGoesUpInParts(t *testing.T) {
	s, client, wire, results := recordedStore(t)
	data := noise(12 << 20) // over fauxqs's 11 MiB request limit
	if err := s.PutResult(context.Background(), "results/job/0.png", "image/png", data); err != nil {
		t.Fatalf("PutResult of 12 MiB: %v", err)
	}
	got, out := getObject(t, client, results, "results/job/0.png")
	if !bytes.Equal(got, data) || aws.ToString(out.ContentType) != "image/png" {
		t.Errorf("read back %d bytes of %s; want the %d written, image/png", len(got), aws.ToString(out.ContentType), len(data))
	}
	if n := len(wire.Ops("UploadPart")); n != 2 {
		t.Errorf("%d parts sent; want 2", n)
	}
}
