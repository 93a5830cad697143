package workerfn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"genjobs/internal/app/workerfn"
	"genjobs/internal/blob"
	"genjobs/internal/netguard"
	"genjobs/internal/testenv"
	"genjobs/internal/worker"
	"genjobs/internal/xray"
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

// The worker's fetch of an input URL, in a sampled invocation, shows in
// the invocation's X-Ray trace as the provider function's calls do: a
// remote subsegment named by the host, with the method and the status,
// and the URL's scheme and host only (its path and query, where a client's
// URL may carry a token, stay out of X-Ray).
func TestInputFetchesAreTraced(t *testing.T) {
	daemon, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	png := []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("pixels", 20))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	// The guard of a deployment, with the test's server let through.
	guard := &netguard.Guard{Exempt: []netip.AddrPort{netip.MustParseAddrPort(u.Host)}}
	f := workerfn.Inputs(guard, xray.NewDaemon(daemon.LocalAddr().String()))
	//lint:ignore SA1029 the key aws-lambda-go sets, a plain string
	ctx := context.WithValue(context.Background(), "x-amzn-trace-id",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	if _, err := f.Fetch(ctx, "image_url", srv.URL+"/inputs/tok_secret/in.png?sig=secret"); err != nil {
		t.Fatal(err)
	}
	_ = daemon.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	n, _, err := daemon.ReadFrom(buf)
	if err != nil {
		t.Fatal("the input fetch sent no subsegment to the daemon")
	}
	_, doc, _ := bytes.Cut(buf[:n], []byte("\n"))
	var s struct {
		Name, Namespace string
		TraceID         string `json:"trace_id"`
		HTTP            struct {
			Request  struct{ Method, URL string }
			Response struct{ Status int }
		}
	}
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "127.0.0.1" || s.Namespace != "remote" || s.TraceID != "1-5759e988-bd862e3fe1be46a994272793" ||
		s.HTTP.Request.Method != "GET" || s.HTTP.Request.URL != srv.URL || s.HTTP.Response.Status != 200 {
		t.Errorf("the input fetch's subsegment %s; want remote 127.0.0.1, GET %s (the host alone), 200", doc, srv.URL)
	}
}
