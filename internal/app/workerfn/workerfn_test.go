package workerfn_test

import (
	"context"
	"errors"
	"testing"

	"genjobs/internal/app/workerfn"
	"genjobs/internal/blob"
	"genjobs/internal/testenv"
	"genjobs/internal/worker"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The shim hands the worker the S3 adapter's answers in the worker's own
// terms: a missing or oversized asset file is an error the worker knows
// (it fails the job as the client's mistake), and a streamed output is a
// worker.Upload that lands in the results bucket.
func TestBlobsSpeakTheWorkersTerms(t *testing.T) {
	ctx := context.Background()
	s3c := testenv.S3(t)
	results, assets := testenv.NewBucket(t), testenv.NewBucket(t)
	store := blob.New(s3c, results, assets)
	b := workerfn.Blobs{Store: store}
	if err := store.PutAsset(ctx, "assets/a.png", "image/png", []byte("12345")); err != nil {
		t.Fatal(err)
	}

	if data, ct, err := b.ReadAsset(ctx, "assets/a.png", 5); err != nil || string(data) != "12345" || ct != "image/png" {
		t.Errorf("ReadAsset of a stored file: %q, %q, %v", data, ct, err)
	}
	if _, _, err := b.ReadAsset(ctx, "assets/missing.png", 5); !errors.Is(err, worker.ErrNotUploaded) {
		t.Errorf("ReadAsset of a file never uploaded: %v; want worker.ErrNotUploaded", err)
	}
	if _, _, err := b.ReadAsset(ctx, "assets/a.png", 4); !errors.Is(err, worker.ErrTooLarge) {
		t.Errorf("ReadAsset of a file over the limit: %v; want worker.ErrTooLarge", err)
	}

	var up worker.Upload = b.CreateResult(ctx, "results/j/0.bin", "application/octet-stream")
	if _, err := up.Write([]byte("output")); err != nil {
		t.Fatal(err)
	}
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := store.ReadResult(ctx, "results/j/0.bin", 100); err != nil || string(got) != "output" {
		t.Errorf("the streamed output: %q, %v; want \"output\"", got, err)
	}
}
