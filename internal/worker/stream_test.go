package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"genjobs/internal/blob"
	"genjobs/internal/engine"
	"genjobs/internal/job"
	"genjobs/internal/testenv"
)

// streamer is a test engine that writes its outputs through the sink in
// pieces, as the streaming enhance engine does: first small (closed at
// once, when set), then big.
type streamer struct {
	small, big []byte
	whole      []byte // returned whole as well, when set
	piece      int
	// holdAt > 0: after this many bytes of big, the engine keeps
	// reporting progress (without writing) until it is told to stop.
	holdAt int
	// failAt > 0: after this many bytes of big, the engine fails.
	failAt int
	result chan error // Run's error, once it returns
}

func (s *streamer) Run(ctx context.Context, j engine.Job, report engine.Report) (files []engine.File, err error) {
	defer func() { s.result <- err }()
	if s.small != nil {
		w, err := j.Outputs.Create("image/png", "png")
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(s.small); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	w, err := j.Outputs.Create("image/jpeg", "jpg")
	if err != nil {
		return nil, err
	}
	for off := 0; off < len(s.big); off += s.piece {
		if err := report(engine.Update{Progress: float64(off) / float64(len(s.big))}); err != nil {
			return nil, err
		}
		if s.failAt > 0 && off >= s.failAt {
			return nil, errors.New("out of GPU")
		}
		for s.holdAt > 0 && off >= s.holdAt {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			if err := report(engine.Update{Progress: float64(off) / float64(len(s.big))}); err != nil {
				return nil, err
			}
		}
		if _, err := w.Write(s.big[off:min(off+s.piece, len(s.big))]); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if s.whole != nil {
		files = append(files, engine.File{ContentType: "image/png", Ext: "png", Data: s.whole})
	}
	return files, nil
}

func noise(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 11))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// streaming installs a streamer as the engine of mesh jobs.
func (e *env) streaming(s *streamer) *streamer {
	if s.piece == 0 {
		s.piece = 1<<20 + 4099 // pieces that do not line up with parts
	}
	s.result = make(chan error, 1)
	e.w.Engines["model-g-3.1-rapid"] = s
	return s
}

func (e *env) download(key string) (int, []byte) {
	e.t.Helper()
	u, err := e.blobs.ResultURL(e.ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// exists tells whether an object is stored under key in the results bucket.
func (e *env) exists(key string) bool {
	e.t.Helper()
	_, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: aws.String(e.results), Key: aws.String(key)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "NotFound" {
		return false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return true
}

// abortedUploads checks that every multipart upload of the job was aborted
// and is gone: fauxqs has no ListMultipartUploads (its GET ?uploads lists
// objects), so a part is sent to each and must be refused with
// NoSuchUpload. (The bucket's clean-up at the end of the test deletes it,
// which fauxqs also refuses while an upload is in progress.)
func (e *env) abortedUploads(jobID string) {
	e.t.Helper()
	created := 0
	for _, c := range e.wire.Ops("CreateMultipartUpload") {
		if !strings.HasPrefix(c.Key, "results/"+jobID+"/") {
			continue
		}
		created++
		aborted := false
		for _, a := range e.wire.Ops("AbortMultipartUpload") {
			aborted = aborted || a.UploadID == c.UploadID && a.Status/100 == 2
		}
		if !aborted {
			e.t.Errorf("the upload of %s was never aborted", c.Key)
		}
		_, err := e.s3.UploadPart(e.ctx, &s3.UploadPartInput{
			Bucket: aws.String(e.results), Key: aws.String(c.Key), UploadId: aws.String(c.UploadID),
			PartNumber: aws.Int32(9), Body: strings.NewReader("late"), ContentLength: aws.Int64(4),
		})
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "NoSuchUpload" {
			e.t.Errorf("a part sent to the upload of %s afterwards: %v; want NoSuchUpload", c.Key, err)
		}
		if e.exists(c.Key) {
			e.t.Errorf("%s is stored", c.Key)
		}
	}
	if created == 0 {
		e.t.Fatalf("no multipart upload was started; the test proves nothing")
	}
}

// partsSent waits until n parts of the job's uploads have gone up.
func (e *env) partsSent(jobID string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sent := 0
		for _, c := range e.wire.Ops("UploadPart") {
			if strings.HasPrefix(c.Key, "results/"+jobID+"/") && c.Status == 200 {
				sent++
			}
		}
		if sent >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("%d part(s) of the job's output never went up", n)
}

func TestAStreamedOutputGoesUpInPartsAndDownloadsWhole(t *testing.T) {
	e := newEnv(t)
	s := e.streaming(&streamer{small: tinyPNG(), big: noise(25<<20 + 12345), whole: noise(1000)})
	j := e.create(mesh, `{}`)
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	got := e.job(j.ID)
	want := []string{"results/" + j.ID + "/0.png", "results/" + j.ID + "/1.jpg", "results/" + j.ID + "/2.png"}
	if got.Status != job.Completed || fmt.Sprint(got.Outputs) != fmt.Sprint(want) {
		t.Fatalf("job %s with outputs %v; want completed with %v", got.Status, got.Outputs, want)
	}
	for i, data := range [][]byte{s.small, s.big, s.whole} {
		if status, body := e.download(want[i]); status != 200 || !bytes.Equal(body, data) {
			t.Errorf("download of %s: %d, %d bytes; want the engine's %d bytes", want[i], status, len(body), len(data))
		}
	}
	var parts []int
	for _, c := range e.wire.Ops("UploadPart") {
		if c.Key == want[1] {
			parts = append(parts, c.PartNumber)
		}
	}
	if fmt.Sprint(parts) != "[1 2 3 4]" {
		t.Errorf("parts sent of the 25 MiB output: %v; want [1 2 3 4] (8 MiB parts)", parts)
	}
	if len(e.wire.Ops("AbortMultipartUpload")) != 0 {
		t.Errorf("an upload of a completed job was aborted")
	}
}

func TestCancellingAStreamingJobStopsTheEngineAndAbortsItsUpload(t *testing.T) {
	e := newEnv(t)
	s := e.streaming(&streamer{small: tinyPNG(), big: noise(20 << 20), holdAt: blob.PartSize + 1<<20})
	j := e.create(mesh, `{}`)
	done := make(chan error, 1)
	go func() { done <- e.w.Run(e.ctx, j.ID) }()
	e.partsSent(j.ID, 1)
	for e.job(j.ID).Status != job.Sampling {
		time.Sleep(10 * time.Millisecond)
	}
	// DELETE /jobs/{id} does this.
	if _, err := e.life.Cancel(e.ctx, e.job(j.ID)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the stopped attempt asked for a retry: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the attempt did not stop after the job was cancelled")
	}
	if err := <-s.result; err == nil {
		t.Errorf("the engine ran to the end of a cancelled job")
	}
	got := e.job(j.ID)
	if got.Status != job.Cancelled || len(got.Outputs) != 0 {
		t.Errorf("job %s with outputs %v; want cancelled with none", got.Status, got.Outputs)
	}
	e.abortedUploads(j.ID)
	if e.exists("results/" + j.ID + "/0.png") {
		t.Errorf("the small output the engine completed before the cancel is kept")
	}
}

func TestAnEngineFailingMidStreamLeavesNoOutput(t *testing.T) {
	e := newEnv(t)
	e.streaming(&streamer{small: tinyPNG(), big: noise(20 << 20), failAt: blob.PartSize + 1<<20})
	j := e.create(mesh, `{}`)
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.job(j.ID); got.Status != job.Failed || got.Error == nil || got.Error.Code != "engine_error" {
		t.Fatalf("job %s %+v; want failed with engine_error", got.Status, got.Error)
	}
	e.abortedUploads(j.ID)
	if e.exists("results/" + j.ID + "/0.png") {
		t.Errorf("the small output of the failed job is kept")
	}
}

func TestAnAttemptOutOfTimeAbortsItsUpload(t *testing.T) {
	e := newEnv(t)
	e.streaming(&streamer{big: noise(20 << 20), holdAt: blob.PartSize + 1<<20})
	j := e.create(mesh, `{}`)
	// The function's deadline is its context's end.
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.w.Run(ctx, j.ID) }()
	e.partsSent(j.ID, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("an attempt out of time: %v; want its context's error, for the message to come back", err)
	}
	if got := e.job(j.ID); got.Status.Terminal() {
		t.Errorf("the job ended (%s) with its attempt out of time; want it left for the retry", got.Status)
	}
	e.abortedUploads(j.ID)
}

func TestAFailedPartRetriesTheAttempt(t *testing.T) {
	e := newEnv(t)
	s := e.streaming(&streamer{big: noise(20 << 20)})
	var refused atomic.Int32
	e.wire.Before = func(_ context.Context, c testenv.S3Call) error {
		if c.Op == "UploadPart" && c.PartNumber == 2 && refused.Add(1) == 1 {
			return errors.New("S3 is unavailable")
		}
		return nil
	}
	j := e.create(mesh, `{}`)
	resp, err := e.w.HandleSQS(e.ctx, sqsEvent(j.ID, "m1"))
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("an attempt whose upload failed: %+v, %v; want its message retried", resp, err)
	}
	if got := e.job(j.ID); got.Status.Terminal() {
		t.Fatalf("S3's failure ended the job: %s %+v", got.Status, got.Error)
	}
	e.abortedUploads(j.ID)
	<-s.result
	resp, err = e.w.HandleSQS(e.ctx, sqsEvent(j.ID, "m1"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("retry: %+v, %v", resp, err)
	}
	got := e.job(j.ID)
	if got.Status != job.Completed || len(got.Outputs) != 1 {
		t.Fatalf("after the retry: %s %v\n%s", got.Status, got.Outputs, e.logs)
	}
	if status, body := e.download(got.Outputs[0]); status != 200 || !bytes.Equal(body, s.big) {
		t.Errorf("download after the retry: %d, %d bytes; want the engine's %d", status, len(body), len(s.big))
	}
}
