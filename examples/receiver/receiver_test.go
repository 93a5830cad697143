package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/client"
	"genjobs/internal/signing"
	"genjobs/internal/webhook"
)

// service plays the sending side with the real code: the JWKS document of
// the current keys and the webhook package's Sender.
type service struct {
	mu   sync.Mutex
	keys []*signing.LocalKey
	jwks *httptest.Server
}

func newService(t *testing.T) *service {
	s := &service{}
	s.rotate(t)
	s.jwks = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	t.Cleanup(s.jwks.Close)
	return s
}

// rotate makes a new current key; the JWKS lists it before the old one.
func (s *service) rotate(t *testing.T) {
	k, err := signing.GenerateLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.keys = append([]*signing.LocalKey{k}, s.keys...)
	s.mu.Unlock()
}

func (s *service) WebhookToken(ctx context.Context, c webhook.Claims) (string, error) {
	s.mu.Lock()
	k := s.keys[0]
	s.mu.Unlock()
	return signing.WebhookToken(ctx, k, signing.WebhookClaims{Issuer: c.Issuer, Audience: c.Audience,
		Subject: c.Subject, ID: c.ID, IssuedAt: c.IssuedAt, Body: c.Body})
}

func TestReceiverVerifiesDeliveries(t *testing.T) {
	svc := newService(t)
	var got []string
	v := client.NewWebhookVerifier("https://api.example.com", "")
	v.JWKSURL = svc.jwks.URL
	var ahead atomic.Int64 // how far the receiver's clock runs ahead
	v.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	srv := httptest.NewServer(v.Handler(func(_ context.Context, ev *client.WebhookEvent) error {
		got = append(got, ev.ID)
		return nil
	}))
	defer srv.Close()
	v.Audience = srv.URL + "/hooks?tenant=a,b"
	rc := struct{ URL string }{v.Audience}

	sender := &webhook.Sender{Client: webhook.NewClient(http.DefaultTransport), Signer: svc}
	d := &webhook.Delivery{JobID: "0194b3a0-5c6e-7d2f-9a01-23456789abcd", ID: webhook.NewID(), URL: rc.URL}
	body := []byte(`{"job_id":"0194b3a0-5c6e-7d2f-9a01-23456789abcd","status":"completed"}`)
	send := func(at time.Time) int {
		t.Helper()
		r, err := sender.Send(context.Background(), d, "https://api.example.com", body, at)
		if err != nil {
			t.Fatal(err)
		}
		return r.StatusCode
	}
	if code := send(time.Now()); code != 204 || len(got) != 1 || got[0] != d.ID {
		t.Fatalf("a good delivery: %d, handled %v", code, got)
	}
	// A retry (fresh timestamp and signature, same id) is acknowledged, not handled twice.
	if code := send(time.Now().Add(time.Second)); code != 204 || len(got) != 1 {
		t.Errorf("a retry: %d, handled %v", code, got)
	}
	// A rotated key is fetched on its first unknown kid, once the JWKS
	// may be fetched again.
	svc.rotate(t)
	ahead.Store(int64(client.JWKSMinInterval))
	d.ID = webhook.NewID()
	if code := send(time.Now()); code != 204 || len(got) != 2 {
		t.Errorf("after a rotation: %d, handled %v", code, got)
	}
	// Old deliveries, other audiences and other issuers are refused.
	if code := send(time.Now().Add(-10 * time.Minute)); code != 401 {
		t.Errorf("a 10-minute-old signature: %d", code)
	}
	other := *d
	other.URL = srv.URL + "/hooks?tenant=a%2Cb" // the same place, not the same bytes
	if r, _ := sender.Send(context.Background(), &other, "https://api.example.com", body, time.Now()); r.StatusCode != 401 {
		t.Errorf("another aud: %d", r.StatusCode)
	}
	if r, _ := sender.Send(context.Background(), d, "https://evil.example.com", body, time.Now()); r.StatusCode != 401 {
		t.Errorf("another iss: %d", r.StatusCode)
	}

	// A signature moved onto another body, or headers that disagree with it.
	token, _ := svc.WebhookToken(context.Background(), webhook.Claims{Issuer: "https://api.example.com", Audience: rc.URL,
		Subject: d.JobID, ID: "whk_x", IssuedAt: time.Now().Truncate(time.Second), Body: body})
	post := func(b []byte, id, ts, sig string) int {
		req, _ := http.NewRequest("POST", rc.URL, bytes.NewReader(b))
		for k, v := range map[string]string{"X-Service-Webhook-Id": id, "X-Service-Webhook-Timestamp": ts, "X-Service-Webhook-Signature": sig} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ts := strconv.FormatInt(time.Now().Truncate(time.Second).Unix(), 10)
	for name, code := range map[string]int{
		"tampered body":     post([]byte(`{"job_id":"x","status":"completed"}`), "whk_x", ts, token),
		"other id header":   post(body, "whk_y", ts, token),
		"no signature":      post(body, "whk_x", ts, ""),
		"garbage signature": post(body, "whk_x", ts, "a.b.c"),
	} {
		if code != 401 {
			t.Errorf("%s: %d; want 401", name, code)
		}
	}
	if code := post(body, "whk_x", ts, token); code != 204 || len(got) != 3 {
		t.Errorf("the same token on its own body: %d, handled %v", code, got)
	}
}
