package client_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"

	"genjobs/client"
)

// TestRetriesOnlyWhatIsSafe: a cancellation whose answer was lost is
// retried, meets 409 and reports the job cancelled; an asset's creation
// (no Idempotency-Key) answered 503 or cut off is not sent again.
func TestRetriesOnlyWhatIsSafe(t *testing.T) {
	st := localStack(t)
	ctx := context.Background()

	t.Run("a cancellation whose answer was lost", func(t *testing.T) {
		p := newFaultProxy(t, st.URL)
		c, _ := newClient(t, p.URL, st.Token)
		// A job whose input never arrives stays processing: it can be cancelled.
		j, err := c.Generate(ctx, &client.ModelE4Request{Prompt: "x", Width: 64, Height: 64, StyleImages: []string{hangingImage(t)}})
		if err != nil {
			t.Fatal(err)
		}
		deletes := 0
		p.setHook(func(w http.ResponseWriter, r *http.Request, n int) bool {
			if r.Method == http.MethodDelete {
				if deletes++; deletes == 1 {
					p.forwardThenReset(w, r)
					return true
				}
			}
			return false
		})
		got, err := c.Jobs.Cancel(ctx, j.ID)
		if err != nil {
			t.Fatalf("Cancel after a lost answer: %v; want the cancelled job", err)
		}
		if got.ID != j.ID || got.Status != client.StatusCancelled {
			t.Errorf("Cancel answered %s %s; want %s cancelled", got.ID, got.Status, j.ID)
		}
		var statuses []int
		for _, r := range p.requests() {
			if r.Method == http.MethodDelete {
				statuses = append(statuses, r.Status)
			}
		}
		if len(statuses) != 2 || statuses[1] != http.StatusConflict {
			t.Errorf("DELETE answers %v; want the lost one, then a 409", statuses)
		}
		// A job that had ended before the first attempt is still a 409.
		if _, err := c.Jobs.Cancel(ctx, j.ID); !isStatus(err, http.StatusConflict) {
			t.Errorf("cancelling an ended job: %v; want the 409", err)
		}
	})

	t.Run("an asset's creation is not sent twice", func(t *testing.T) {
		for name, fault := range map[string]func(p *faultProxy, w http.ResponseWriter, r *http.Request){
			"503": func(_ *faultProxy, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":"The service is temporarily unavailable; retry shortly."}`))
			},
			"answer lost": func(p *faultProxy, w http.ResponseWriter, r *http.Request) { p.forwardThenReset(w, r) },
		} {
			t.Run(name, func(t *testing.T) {
				p := newFaultProxy(t, st.URL)
				c, _ := newClient(t, p.URL, st.Token)
				p.setHook(func(w http.ResponseWriter, r *http.Request, n int) bool {
					if r.Method == http.MethodPost && r.URL.Path == "/assets" {
						fault(p, w, r)
						return true
					}
					return false
				})
				_, err := c.Assets.Upload(ctx, bytes.NewReader(smallPNG(t)), "")
				if err == nil {
					t.Fatal("the upload succeeded through the fault")
				}
				if n := len(p.requests()); n != 1 {
					t.Errorf("%d requests; want the one POST /assets, not retried", n)
				}
			})
		}
	})
}

func isStatus(err error, code int) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.StatusCode == code
}

func smallPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestErrorsMatchTheirSentinels: the errors that are not the API's answers
// match the sentinels the package documentation lists.
func TestErrorsMatchTheirSentinels(t *testing.T) {
	ctx := context.Background()
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>a proxy's page</html>"))
	}))
	defer notJSON.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close() // nothing listens there any more
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer refused.Close()

	c := func(u string) *client.Client {
		cl, _ := newClient(t, u, "gjs_test", client.WithMaxRetries(0))
		return cl
	}
	job := &client.Job{ID: "0194b3a0-5c6e-7d2f-9a01-23456789abcd", Result: &client.Result{URLs: []string{refused.URL + "/0.png"}}}
	for _, tc := range []struct {
		name string
		err  func() error
		want error
	}{
		{"no token", func() error {
			_, err := client.NewClient(client.WithToken(""), client.WithBaseURL("http://127.0.0.1:9"))
			return err
		}, client.ErrConfig},
		{"a relative API URL", func() error {
			_, err := client.NewClient(client.WithToken("gjs_x"), client.WithBaseURL("api.example.com"))
			return err
		}, client.ErrConfig},
		{"a body that is not JSON", func() error {
			_, err := c(notJSON.URL).Generate(ctx, client.RawRequest{Route: "3d/vendor-g/model-g-3.1-rapid", Body: []byte("{")})
			return err
		}, client.ErrRequest},
		{"nothing listening", func() error { _, err := c(goneURL).Jobs.Get(ctx, job.ID); return err }, client.ErrUnreachable},
		{"an answer that is not JSON", func() error { _, err := c(notJSON.URL).Jobs.Get(ctx, job.ID); return err }, client.ErrUnexpectedAnswer},
		{"no such result file", func() error { _, err := c(notJSON.URL).Jobs.Download(ctx, job, 3, &bytes.Buffer{}); return err }, client.ErrNoResult},
		{"storage refusing the download", func() error { _, err := c(notJSON.URL).Jobs.Download(ctx, job, 0, &bytes.Buffer{}); return err }, client.ErrDownload},
		{"not an image", func() error {
			_, err := c(notJSON.URL).Assets.Upload(ctx, bytes.NewReader([]byte("just text")), "")
			return err
		}, client.ErrNotAnImage},
		{"a verifier without an Audience", func() error {
			v := client.NewWebhookVerifier("https://api.example.com", "")
			h := http.Header{}
			h.Set(client.WebhookIDHeader, "whk_1")
			h.Set(client.WebhookTimestampHeader, "1")
			h.Set(client.WebhookSignatureHeader, "a.b.c")
			_, err := v.Verify(ctx, h, []byte("{}"))
			return err
		}, client.ErrWebhookKeys},
	} {
		if err := tc.err(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want an error matching %v", tc.name, err, tc.want)
		}
	}
}
