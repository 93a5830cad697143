package client_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"genjobs/client"
)

var fast = &client.WaitOptions{Interval: 100 * time.Millisecond, MaxInterval: 500 * time.Millisecond}

// Jobs, assets, usage and styles through the local stack.
func TestJobsThroughTheStack(t *testing.T) {
	st := localStack(t)
	ctx := context.Background()
	p := newFaultProxy(t, st.URL)
	c, err := client.NewClient(client.WithBaseURL(p.URL), client.WithToken(st.Token))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Run and Download, the URL read again when it has expired", func(t *testing.T) {
		var updates []client.Status
		o := *fast
		o.OnUpdate = func(j *client.Job) { updates = append(updates, j.Status) }
		j, err := c.Run(ctx, &client.ModelE4Request{Prompt: "a red bicycle", Width: 96, Height: 64}, &o)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != client.StatusCompleted || len(updates) == 0 || updates[len(updates)-1] != client.StatusCompleted {
			t.Fatalf("Run: %s, updates %v", j.Status, updates)
		}
		// Storage refuses an expired presigned URL with 403.
		expired := *j
		expired.Result = &client.Result{URLs: []string{p.URL + "/storage/expired/0.png"}}
		p.setHook(func(w http.ResponseWriter, r *http.Request, n int) bool {
			if strings.HasPrefix(r.URL.Path, "/storage/expired/") {
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>`))
				return true
			}
			return false
		})
		var buf bytes.Buffer
		if _, err := c.Jobs.Download(ctx, &expired, 0, &buf); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatalf("downloaded %d bytes that are not a PNG: %v", buf.Len(), err)
		}
		if b := img.Bounds(); b.Dx() != 96 || b.Dy() != 64 {
			t.Errorf("image %v; want 96x64", b)
		}
		if expired.Result.URLs[0] == p.URL+"/storage/expired/0.png" {
			t.Error("the job kept its expired URL")
		}
		d, err := c.Jobs.Details(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.JobID != j.ID || d.Endpoint != "/generate/image/vendor-b/model-e-4" || d.Source != "api" || d.Route != "reference" ||
			d.Billing.Currency != "usd" || d.Billing.Price != "0.030000" || d.Billing.Charged == nil || *d.Billing.Charged != "0.030000" ||
			d.StartedAt == nil || d.EndedAt == nil || !strings.Contains(string(d.Input), `"prompt":"a red bicycle"`) {
			t.Errorf("Details of the completed job: %+v, input %s", d, d.Input)
		}
		var apiErr *client.APIError
		if _, err := c.Jobs.Details(ctx, "0194b3a0-5c6e-7d2f-9a01-23456789abcd"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("Details of an unknown job: %v; want a 404 APIError", err)
		}
	})

	t.Run("List walks every page", func(t *testing.T) {
		for range 3 {
			if _, err := c.Generate(ctx, &client.ModelG31RapidRequest{}); err != nil {
				t.Fatal(err)
			}
		}
		page, err := c.Jobs.ListPage(ctx, client.ListParams{Limit: 2})
		if err != nil || len(page.Items) != 2 || page.NextCursor == nil {
			t.Fatalf("first page: %+v %v", page, err)
		}
		before := len(p.requests())
		var ids []string
		for j, err := range c.Jobs.List(ctx, client.ListParams{Limit: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, j.ID)
		}
		if len(ids) < 4 {
			t.Errorf("%d jobs listed; want at least 4", len(ids))
		}
		if pages := len(p.requests()) - before; pages != (len(ids)+2)/2 && pages != (len(ids)+1)/2 {
			t.Errorf("%d pages read for %d jobs of 2 a page", pages, len(ids))
		}
		// Breaking out of the loop reads no further page.
		before = len(p.requests())
		for range c.Jobs.List(ctx, client.ListParams{Limit: 2}) {
			break
		}
		if n := len(p.requests()) - before; n != 1 {
			t.Errorf("%d pages read to take one job", n)
		}
	})

	t.Run("Wait on a failed job", func(t *testing.T) {
		missing := httptest.NewServer(http.NotFoundHandler())
		defer missing.Close()
		j, err := c.Run(ctx, &client.ModelE4Request{Prompt: "x", Width: 64, Height: 64, StyleImages: []string{missing.URL + "/gone.png"}}, fast)
		var failed *client.JobFailedError
		if !errors.As(err, &failed) || failed.Job.Error == nil || failed.Job.Error.Code != "invalid_input" {
			t.Fatalf("Run: %v; want a *JobFailedError with invalid_input", err)
		}
		if j == nil || j.Status != client.StatusFailed || j.CompletedAt == nil {
			t.Errorf("the failed record: %+v", j)
		}
	})

	t.Run("Cancel, and Wait on a cancelled job", func(t *testing.T) {
		j, err := c.Generate(ctx, &client.ModelE4Request{Prompt: "x", Width: 64, Height: 64, StyleImages: []string{hangingImage(t)}})
		if err != nil {
			t.Fatal(err)
		}
		cancelled, err := c.Jobs.Cancel(ctx, j.ID)
		if err != nil || cancelled.Status != client.StatusCancelled {
			t.Fatalf("Cancel: %+v %v", cancelled, err)
		}
		_, err = c.Jobs.Wait(ctx, j.ID, fast)
		var ce *client.JobCancelledError
		if !errors.As(err, &ce) || ce.Job.ID != j.ID {
			t.Errorf("Wait: %v; want a *JobCancelledError", err)
		}
	})

	t.Run("assets: small in one request, large through a presigned upload", func(t *testing.T) {
		small, large := pngOf(t, 64, 48, false), pngOf(t, 1500, 1100, true)
		if len(large) <= client.MaxDirectUpload {
			t.Fatalf("the large PNG is %d bytes; it must be over 4 MiB", len(large))
		}
		before := len(p.requests())
		a, err := c.Assets.Upload(ctx, bytes.NewReader(small), "")
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Assets.Upload(ctx, bytes.NewReader(large), "image/png")
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, r := range p.requests()[before:] {
			paths = append(paths, r.Method+" "+r.Path)
		}
		if strings.Join(paths, ",") != "POST /assets,POST /assets/uploads" {
			t.Errorf("requests %v", paths)
		}
		// Both are inputs of the workspace's jobs.
		for _, asset := range []*client.Asset{a, b} {
			j, err := c.Run(ctx, &client.StandardEnhanceRequest{ImageURL: asset.URL, Width: 128, Height: 96, Model: "Standard V2",
				OutputFormat: client.Ptr("png")}, fast)
			if err != nil {
				t.Fatalf("enhance %s: %v", asset.URL, err)
			}
			if j.FileName(0) != "0.png" {
				t.Errorf("file name %q", j.FileName(0))
			}
		}
	})

	t.Run("usage, styles, share link, deliveries, raw requests", func(t *testing.T) {
		u, err := c.Usage(ctx, 7)
		if err != nil || u.TotalUSD == "" || len(u.RawJSON()) == 0 {
			t.Fatalf("Usage: %+v %v", u, err)
		}
		n := 0
		for s, err := range c.Styles.List(ctx, client.StyleParams{Limit: 1}) {
			if err != nil {
				t.Fatal(err)
			}
			if s.ID == "" {
				t.Error("a style without id")
			}
			n++
		}
		if n < 3 {
			t.Errorf("%d styles; want the seeded ones", n)
		}
		link, err := c.Styles.ShareLink(ctx, "sty_demo_api_sketch")
		if err != nil || link.URL == "" {
			t.Fatalf("ShareLink: %+v %v", link, err)
		}
		again, err := c.Styles.ShareLink(ctx, "sty_demo_api_sketch")
		if err != nil || again.IsNew || again.URL != link.URL {
			t.Errorf("second ShareLink: %+v %v", again, err)
		}
		j, err := c.Generate(ctx, client.RawRequest{Route: "3d/vendor-g/model-g-3.1-rapid", Body: []byte(`{"prompt":"a chair"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if d, err := c.Jobs.Deliveries(ctx, j.ID); err != nil || len(d) != 0 {
			t.Errorf("Deliveries of a job without webhook: %+v %v", d, err)
		}
	})
}

// pngOf encodes a w x h PNG; noisy ones do not compress.
func pngOf(t *testing.T, w, h int, noisy bool) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range h {
		for x := range w {
			c := color.NRGBA{uint8(x), uint8(y), 90, 255}
			if noisy {
				c = color.NRGBA{uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
