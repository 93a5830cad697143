package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/client"
	"genjobs/internal/signing"
)

// signer plays the service's side with its own signing code: a JWKS of
// its current keys and tokens signed by the newest one.
type signer struct {
	mu      sync.Mutex
	keys    []*signing.LocalKey
	fetches atomic.Int32
	url     string
}

func newSigner(t *testing.T) *signer {
	s := &signer{}
	s.rotate(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		var pubs []signing.PublicKey
		for _, k := range s.keys {
			p, _ := k.PublicKey(r.Context())
			pubs = append(pubs, p)
		}
		doc, _ := signing.JWKS(pubs...)
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *signer) rotate(t *testing.T) {
	k, err := signing.GenerateLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.keys = append([]*signing.LocalKey{k}, s.keys...)
	s.mu.Unlock()
}

// headers signs body for aud at iat with key (the current one when nil).
func (s *signer) headers(t *testing.T, key *signing.LocalKey, iss, aud, id string, iat time.Time, body []byte) http.Header {
	t.Helper()
	if key == nil {
		s.mu.Lock()
		key = s.keys[0]
		s.mu.Unlock()
	}
	token, err := signing.WebhookToken(context.Background(), key, signing.WebhookClaims{Issuer: iss, Audience: aud,
		Subject: "0194b3a0-5c6e-7d2f-9a01-23456789abcd", ID: id, IssuedAt: iat, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(client.WebhookIDHeader, id)
	h.Set(client.WebhookTimestampHeader, strconv.FormatInt(iat.Unix(), 10))
	h.Set(client.WebhookSignatureHeader, token)
	return h
}

func TestWebhookVerifier(t *testing.T) {
	const iss, aud = "https://api.example.com", "https://hooks.example.com/in?tenant=a,b"
	body := []byte(`{"job_id":"0194b3a0-5c6e-7d2f-9a01-23456789abcd","status":"completed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:33:05.000Z","result":{"urls":["https://x/0.png"]},"progress":1}`)
	now := time.Date(2026, 11, 21, 20, 34, 0, 0, time.UTC)
	s := newSigner(t)
	v := client.NewWebhookVerifier(iss, aud)
	v.JWKSURL, v.Now = s.url, func() time.Time { return now }
	ctx := context.Background()

	ev, err := v.Verify(ctx, s.headers(t, nil, iss, aud, "whk_1", now.Add(-time.Minute), body), body)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != "whk_1" || ev.JobID != "0194b3a0-5c6e-7d2f-9a01-23456789abcd" || ev.Job.Status != client.StatusCompleted || ev.Job.Result.URLs[0] != "https://x/0.png" {
		t.Errorf("event %+v", ev)
	}
	if n := s.fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches; want 1", n)
	}

	other, _ := signing.GenerateLocalKey() // a key the JWKS never lists
	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-2] = '0'
	noSig := s.headers(t, nil, iss, aud, "whk_2", now, body)
	noSig.Del(client.WebhookSignatureHeader)
	wrongID := s.headers(t, nil, iss, aud, "whk_2", now, body)
	wrongID.Set(client.WebhookIDHeader, "whk_3")
	for _, tc := range []struct {
		name   string
		header http.Header
		body   []byte
		want   error
	}{
		{"a tampered body", s.headers(t, nil, iss, aud, "whk_2", now, body), tampered, client.ErrWebhookBody},
		{"another aud", s.headers(t, nil, iss, "https://hooks.example.com/in?tenant=a%2Cb", "whk_2", now, body), body, client.ErrWebhookAudience},
		{"another iss", s.headers(t, nil, "https://evil.example.com", aud, "whk_2", now, body), body, client.ErrWebhookIssuer},
		{"an expired token", s.headers(t, nil, iss, aud, "whk_2", now.Add(-6*time.Minute), body), body, client.ErrWebhookExpired},
		{"a token from the future", s.headers(t, nil, iss, aud, "whk_2", now.Add(2*time.Minute), body), body, client.ErrWebhookExpired},
		{"an unknown kid", s.headers(t, other, iss, aud, "whk_2", now, body), body, client.ErrWebhookUnknownKey},
		{"a missing signature header", noSig, body, client.ErrWebhookUnsigned},
		{"headers that disagree with the claims", wrongID, body, client.ErrWebhookMalformed},
	} {
		before := s.fetches.Load()
		_, err := v.Verify(ctx, tc.header, tc.body)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, err, tc.want)
		}
		if fetched := s.fetches.Load() - before; fetched != 0 {
			t.Errorf("%s: %d JWKS fetches; want none (cached, and fetched less than %s ago)", tc.name, fetched, client.JWKSMinInterval)
		}
	}

	// Once JWKSMinInterval has passed, an unknown kid is looked for in the
	// JWKS fetched again, once: the next unknown kids are not.
	now = now.Add(client.JWKSMinInterval)
	before := s.fetches.Load()
	for i := range 3 {
		if _, err := v.Verify(ctx, s.headers(t, other, iss, aud, "whk_x"+strconv.Itoa(i), now, body), body); !errors.Is(err, client.ErrWebhookUnknownKey) {
			t.Errorf("an unknown kid: %v", err)
		}
	}
	if fetched := s.fetches.Load() - before; fetched != 1 {
		t.Errorf("three unknown kids: %d JWKS fetches; want one", fetched)
	}

	// A rotated key is found by one refetch; the JWKS is kept 5 minutes.
	s.rotate(t)
	now = now.Add(client.JWKSMinInterval)
	before = s.fetches.Load()
	if _, err := v.Verify(ctx, s.headers(t, nil, iss, aud, "whk_4", now, body), body); err != nil {
		t.Fatalf("after a rotation: %v", err)
	}
	if _, err := v.Verify(ctx, s.headers(t, nil, iss, aud, "whk_5", now, body), body); err != nil || s.fetches.Load()-before != 1 {
		t.Errorf("after a rotation: %v, %d fetches; want one", err, s.fetches.Load()-before)
	}
	now = now.Add(5 * time.Minute)
	if _, err := v.Verify(ctx, s.headers(t, nil, iss, aud, "whk_6", now, body), body); err != nil || s.fetches.Load()-before != 2 {
		t.Errorf("5 minutes later: %v, %d fetches; want the JWKS read again", err, s.fetches.Load()-before)
	}
}

// Handler answers refusals 401 and handles each webhook id once.
func TestWebhookHandlerDedupes(t *testing.T) {
	const iss = "https://api.example.com"
	s := newSigner(t)
	var handled []string
	v := client.NewWebhookVerifier(iss, "")
	v.JWKSURL = s.url
	srv := httptest.NewServer(v.Handler(func(_ context.Context, ev *client.WebhookEvent) error {
		handled = append(handled, ev.ID)
		return nil
	}))
	defer srv.Close()
	v.Audience = srv.URL + "/hooks"
	body := []byte(`{"job_id":"0194b3a0-5c6e-7d2f-9a01-23456789abcd","status":"cancelled","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:33:01.000Z","result":null}`)
	post := func(h http.Header) int {
		req, _ := http.NewRequest("POST", v.Audience, bytesReader(body))
		for k, vs := range h {
			req.Header[k] = vs
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	first := post(s.headers(t, nil, iss, v.Audience, "whk_a", time.Now(), body))
	retry := post(s.headers(t, nil, iss, v.Audience, "whk_a", time.Now().Add(time.Second), body))
	unsigned := post(http.Header{})
	if first != 204 || retry != 204 || unsigned != 401 || len(handled) != 1 {
		t.Errorf("first %d, retry %d, unsigned %d, handled %v; want 204, 204, 401 and one call", first, retry, unsigned, handled)
	}
}

// A job created with a webhook URL through the local stack is delivered,
// and the delivery verifies against the API's own JWKS.
func TestWebhookThroughTheStack(t *testing.T) {
	st := localStack(t)
	c, _ := newClient(t, st.URL, st.Token)
	events := make(chan *client.WebhookEvent, 4)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	hook := srv.URL + "/hooks?tenant=demo"
	mux.Handle("/hooks", c.WebhookVerifier(hook).Handler(func(_ context.Context, ev *client.WebhookEvent) error {
		events <- ev
		return nil
	}))
	j, err := c.Generate(context.Background(), &client.ModelG31RapidRequest{Prompt: client.Ptr("a teapot")}, client.WithWebhookURL(hook))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.JobID != j.ID || ev.Job.ID != j.ID || ev.Job.Status != client.StatusCompleted {
			t.Errorf("event %+v for job %s", ev, j.ID)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("no verified delivery within 90 s")
	}
	// The attempt is recorded once the receiver's answer is back.
	var d []client.Delivery
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if d, err = c.Jobs.Deliveries(context.Background(), j.ID); err != nil || (len(d) == 1 && d[0].StatusCode != nil) {
			break
		}
	}
	if err != nil || len(d) != 1 || d[0].StatusCode == nil || *d[0].StatusCode != 204 {
		t.Errorf("deliveries %+v %v; want one attempt answered 204", d, err)
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// heldJWKS serves a signer's JWKS, holding each fetch until the test lets
// it go (release), and counts the fetches.
type heldJWKS struct {
	url     string
	fetches atomic.Int32
	release chan struct{}
	started chan struct{} // one value per fetch that arrived
}

func holdJWKS(t *testing.T, s *signer) *heldJWKS {
	h := &heldJWKS{release: make(chan struct{}), started: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.fetches.Add(1)
		h.started <- struct{}{}
		<-h.release
		resp, err := http.Get(s.url)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		srv.Close()
	})
	h.url = srv.URL
	return h
}

// TestWebhookKeyFetchIsSharedAndHoldsNothingUp: while a fetch of the JWKS
// for an unknown kid is under way, a delivery whose key is known verifies
// at once, and twenty more deliveries with unknown kids wait for that one
// fetch instead of making their own; then, within JWKSMinInterval, unknown
// kids cause no fetch at all.
func TestWebhookKeyFetchIsSharedAndHoldsNothingUp(t *testing.T) {
	const iss, aud = "https://api.example.com", "https://hooks.example.com/in"
	body := []byte(`{"job_id":"0194b3a0-5c6e-7d2f-9a01-23456789abcd","status":"cancelled","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:33:01.000Z","result":null}`)
	now := time.Date(2026, 11, 21, 20, 34, 0, 0, time.UTC)
	s := newSigner(t)
	held := holdJWKS(t, s)
	v := client.NewWebhookVerifier(iss, aud)
	v.JWKSURL = held.url
	var clock sync.Mutex
	v.Now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	ctx := context.Background()

	// The first verification fetches the keys.
	first := make(chan error, 1)
	go func() { _, err := v.Verify(ctx, s.headers(t, nil, iss, aud, "whk_1", now, body), body); first <- err }()
	<-held.started
	held.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	// A minute on, an unknown kid starts a fetch, which the JWKS holds.
	clock.Lock()
	now = now.Add(time.Minute)
	clock.Unlock()
	other, _ := signing.GenerateLocalKey()
	const unknown = 20
	errs := make(chan error, unknown+1)
	go func() { _, err := v.Verify(ctx, s.headers(t, other, iss, aud, "whk_u", now, body), body); errs <- err }()
	<-held.started

	// A known key verifies meanwhile.
	known := make(chan error, 1)
	go func() { _, err := v.Verify(ctx, s.headers(t, nil, iss, aud, "whk_2", now, body), body); known <- err }()
	select {
	case err := <-known:
		if err != nil {
			t.Errorf("a delivery with a known key during a fetch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a delivery with a known key waited for the fetch of the JWKS (still waiting after 10 s)")
	}

	// More unknown kids wait for the fetch under way.
	var wg sync.WaitGroup
	for i := range unknown {
		wg.Go(func() {
			_, err := v.Verify(ctx, s.headers(t, other, iss, aud, "whk_v"+strconv.Itoa(i), now, body), body)
			errs <- err
		})
	}
	close(held.release)
	wg.Wait()
	for range unknown + 1 {
		if err := <-errs; !errors.Is(err, client.ErrWebhookUnknownKey) {
			t.Errorf("an unknown kid: %v; want ErrWebhookUnknownKey", err)
		}
	}
	if n := held.fetches.Load(); n != 2 {
		t.Errorf("%d JWKS fetches for the first key and %d unknown kids at once; want 2", n, unknown+1)
	}
	// Within JWKSMinInterval of that fetch, unknown kids fetch nothing.
	for i := range 5 {
		if _, err := v.Verify(ctx, s.headers(t, other, iss, aud, "whk_w"+strconv.Itoa(i), now, body), body); !errors.Is(err, client.ErrWebhookUnknownKey) {
			t.Errorf("an unknown kid: %v", err)
		}
	}
	if n := held.fetches.Load(); n != 2 {
		t.Errorf("%d JWKS fetches; want no more within %s", n, client.JWKSMinInterval)
	}
}

// TestWebhookHandlerKeepsInFlightApartFromDone: a duplicate delivery that
// comes while the first is being handled is answered 409 (delivered again
// later), not 204; when the first handling fails, the next delivery is
// handled; once handled, duplicates are answered 204 without a call. A
// JWKS that cannot be read is answered 503, not 401.
func TestWebhookHandlerKeepsInFlightApartFromDone(t *testing.T) {
	const iss = "https://api.example.com"
	s := newSigner(t)
	v := client.NewWebhookVerifier(iss, "")
	v.JWKSURL = s.url
	entered, proceed := make(chan struct{}, 4), make(chan error)
	var calls atomic.Int32
	srv := httptest.NewServer(v.Handler(func(_ context.Context, ev *client.WebhookEvent) error {
		calls.Add(1)
		entered <- struct{}{}
		return <-proceed
	}))
	defer srv.Close()
	v.Audience = srv.URL + "/hooks"
	body := []byte(`{"job_id":"0194b3a0-5c6e-7d2f-9a01-23456789abcd","status":"cancelled","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:33:01.000Z","result":null}`)
	post := func(id string) int {
		req, _ := http.NewRequest("POST", v.Audience, bytesReader(body))
		for k, vs := range s.headers(t, nil, iss, v.Audience, id, time.Now(), body) {
			req.Header[k] = vs
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	firstDone := make(chan int, 1)
	go func() { firstDone <- post("whk_a") }()
	<-entered
	if code := post("whk_a"); code != http.StatusConflict {
		t.Errorf("a duplicate while the first is being handled: %d; want 409", code)
	}
	proceed <- errors.New("the receiver's database is down")
	if code := <-firstDone; code != http.StatusInternalServerError {
		t.Errorf("a failed handling: %d; want 500", code)
	}
	againDone := make(chan int, 1)
	go func() { againDone <- post("whk_a") }()
	<-entered
	proceed <- nil
	if code := <-againDone; code != http.StatusNoContent {
		t.Errorf("the delivery after a failed handling: %d; want 204", code)
	}
	if code := post("whk_a"); code != http.StatusNoContent {
		t.Errorf("a duplicate of a handled delivery: %d; want 204", code)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls; want 2 (the failed one and its retry)", n)
	}

	// The service's keys out of reach: 503, matching ErrWebhookKeys.
	down := client.NewWebhookVerifier(iss, v.Audience)
	down.JWKSURL = "http://127.0.0.1:1/.well-known/jwks.json"
	var refusal error
	down.OnRefusal = func(_ *http.Request, err error) { refusal = err }
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", v.Audience, bytesReader(body))
	req.Header = s.headers(t, nil, iss, v.Audience, "whk_b", time.Now(), body)
	down.Handler(func(context.Context, *client.WebhookEvent) error { return nil }).ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !errors.Is(refusal, client.ErrWebhookKeys) {
		t.Errorf("JWKS out of reach: %d %v; want 503 and ErrWebhookKeys", rec.Code, refusal)
	}
}
