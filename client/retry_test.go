package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/client"
)

// Faults between the client and the local stack, injected by a proxy on
// 127.0.0.1: retries never create a second job.
func TestRetriesThroughFaults(t *testing.T) {
	st := localStack(t)
	ctx := context.Background()
	req := &client.ModelG31RapidRequest{Prompt: client.Ptr("a teapot")}

	t.Run("503 with Retry-After twice, then 200", func(t *testing.T) {
		p := newFaultProxy(t, st.URL)
		p.setHook(func(w http.ResponseWriter, r *http.Request, n int) bool {
			if n < 2 {
				w.Header().Set("Retry-After", "2")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":"The service is busy; retry shortly."}`))
				return true
			}
			return false
		})
		c, s := newClient(t, p.URL, st.Token)
		j, err := c.Generate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		reqs := p.requests()
		if len(reqs) != 3 || reqs[2].Status != 200 {
			t.Fatalf("requests %+v; want two 503s and a 200", reqs)
		}
		if k := reqs[0].IdempotencyKey; k == "" || reqs[1].IdempotencyKey != k || reqs[2].IdempotencyKey != k {
			t.Errorf("Idempotency-Keys %q %q %q; want one key on all three", reqs[0].IdempotencyKey, reqs[1].IdempotencyKey, reqs[2].IdempotencyKey)
		}
		if w := s.waits(); !slices.Equal(w, []time.Duration{2 * time.Second, 2 * time.Second}) {
			t.Errorf("waited %v; want the 2 s Retry-After twice (4 s)", w)
		}
		if j.Status != client.StatusQueued && j.Status != client.StatusBacklogged || j.Replayed() {
			t.Errorf("created %s (replayed %v); want a new pending job", j.Status, j.Replayed())
		}

		// Without retries the 503 is the error, with the wait it asked for.
		once, _ := newClient(t, p.URL, st.Token, client.WithMaxRetries(0))
		p.setHook(func(w http.ResponseWriter, r *http.Request, n int) bool {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"message":"Service Unavailable"}`))
			return true
		})
		_, err = once.Generate(ctx, req)
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.RetryAfter != 2*time.Second || apiErr.Message != "Service Unavailable" {
			t.Errorf("without retries: %v; want the 503 with Retry-After 2 s", err)
		}
	})

	t.Run("a context cancelled during the wait returns at once", func(t *testing.T) {
		p := newFaultProxy(t, st.URL)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		p.setHook(func(w http.ResponseWriter, r *http.Request, n int) bool {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
			cancel() // the client is about to wait 30 s
			return true
		})
		// The real sleep: only the context can end it early.
		c, err := client.NewClient(client.WithBaseURL(p.URL), client.WithToken(st.Token))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := c.Generate(ctx, req); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Generate: %v; want context.Canceled", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Generate still waiting 15 s after its context was cancelled (Retry-After 30)")
		}
		if n := len(p.requests()); n != 1 {
			t.Errorf("%d requests; want 1", n)
		}
	})

	t.Run("a connection reset after the job was created", func(t *testing.T) {
		p := newFaultProxy(t, st.URL)
		// The retry is the client's, or net/http's own on a reused
		// connection (it resends requests that carry an Idempotency-Key):
		// either way with the same key.
		c, _ := newClient(t, p.URL, st.Token)
		before := countJobs(t, c)
		posts := 0
		p.setHook(func(w http.ResponseWriter, r *http.Request, n int) bool {
			if r.Method == http.MethodPost {
				if posts++; posts == 1 {
					p.forwardThenReset(w, r)
					return true
				}
			}
			return false
		})
		j, err := c.Generate(ctx, req, client.WithIdempotencyKey("reset-"+t.Name()))
		if err != nil {
			t.Fatal(err)
		}
		reqs := p.requests()
		reqs = reqs[len(reqs)-2:]
		if reqs[1].Replayed != "true" || !j.Replayed() {
			t.Fatalf("requests %+v, replayed %v; want the retry answered with Idempotent-Replayed", reqs, j.Replayed())
		}
		if reqs[0].IdempotencyKey != "reset-"+t.Name() || reqs[1].IdempotencyKey != reqs[0].IdempotencyKey {
			t.Errorf("keys %q, %q; want the given key twice", reqs[0].IdempotencyKey, reqs[1].IdempotencyKey)
		}
		if after := countJobs(t, c); after != before+1 {
			t.Errorf("%d jobs, then %d; want exactly one more", before, after)
		}
	})
}

// hangingImage is the URL of an image that never arrives (until the test
// ends): a job with it as an input stays processing.
func hangingImage(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL + "/slow.png"
}

func countJobs(t *testing.T, c *client.Client) int {
	t.Helper()
	n := 0
	for _, err := range c.Jobs.List(context.Background(), client.ListParams{Limit: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// The API's refusals come back as *APIError with the API's own message and
// the request id.
func TestAPIErrors(t *testing.T) {
	st := localStack(t)
	ctx := context.Background()
	c, _ := newClient(t, st.URL, st.Token)
	req := &client.ModelG31RapidRequest{Prompt: client.Ptr("a teapot")}

	broke := st.Workspace(t, "ws-broke", 0, 20, 5)
	full := st.Workspace(t, "ws-full", 10*1_000_000, 1, 1)
	fullClient, fullSleeps := newClient(t, st.URL, full)
	// A job whose input never arrives stays processing: the workspace is full.
	slow := &client.ModelE4Request{Prompt: "x", Width: 64, Height: 64, StyleImages: []string{hangingImage(t)}}
	if _, err := fullClient.Generate(ctx, slow); err != nil {
		t.Fatal(err)
	}
	done, err := c.Run(ctx, req, &client.WaitOptions{Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		call    func() error
		status  int
		message string
	}{
		{"401", func() error {
			bad, _ := newClient(t, st.URL, "gjs_"+strings.Repeat("A", 43))
			_, err := bad.Jobs.Get(ctx, done.ID)
			return err
		}, 401, "You are not authenticated."},
		{"402", func() error {
			b, _ := newClient(t, st.URL, broke)
			_, err := b.Generate(ctx, req)
			return err
		}, 402, "You have run out of credits."},
		{"404", func() error {
			_, err := c.Jobs.Get(ctx, "0194b3a0-5c6e-7d2f-9a01-23456789abcd")
			return err
		}, 404, "Job not found."},
		{"409", func() error {
			_, err := c.Jobs.Cancel(ctx, done.ID)
			return err
		}, 409, ""},
		{"422", func() error {
			if _, err := c.Generate(ctx, req, client.WithIdempotencyKey("k422")); err != nil {
				return err
			}
			_, err := c.Generate(ctx, &client.ModelG31RapidRequest{Prompt: client.Ptr("a kettle")}, client.WithIdempotencyKey("k422"))
			return err
		}, 422, "This Idempotency-Key was used with a different request."},
		{"429 after the retries", func() error {
			_, err := fullClient.Generate(ctx, req)
			return err
		}, 429, "You have reached the maximum number of concurrent jobs."},
		{"400", func() error {
			_, err := c.Generate(ctx, &client.ModelE4Request{Prompt: "x", Width: 1, Height: 64})
			return err
		}, 400, "The request body is invalid: width must be between 64 and 4096"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var apiErr *client.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("%v; want an *APIError", err)
			}
			if apiErr.StatusCode != tc.status || (tc.message != "" && apiErr.Message != tc.message) || apiErr.Message == "" {
				t.Errorf("%d %q; want %d %q", apiErr.StatusCode, apiErr.Message, tc.status, tc.message)
			}
			if apiErr.RequestID == "" {
				t.Error("no request id")
			}
		})
	}
	// The 429 was retried with backoff before it surfaced.
	if w := fullSleeps.waits(); len(w) != client.DefaultMaxRetries {
		t.Errorf("the 429 was waited on %v; want %d backoffs", w, client.DefaultMaxRetries)
	}
}

// A Retry-After too long to wait for ends the call with the 503, however
// large the number: one that overflows a time.Duration, or an int, is not
// read as "retry now".
func TestAnEndlessRetryAfterIsNotARetryNow(t *testing.T) {
	for _, v := range []string{"100000", "10000000000", "99999999999999999999"} {
		t.Run(v, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Retry-After", v)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":"The service is busy; retry shortly."}`))
			}))
			defer srv.Close()
			c, s := newClient(t, srv.URL, "tok")
			_, err := c.Usage(context.Background(), 7)
			var apiErr *client.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("Usage: %v; want the 503", err)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("%d requests, waits %v; want 1: the wait asked for is beyond the client's longest", n, s.waits())
			}
		})
	}
}
