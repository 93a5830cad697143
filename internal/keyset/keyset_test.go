package keyset_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/MicahParks/jwkset"

	"genjobs/internal/keyset"
)

// host serves a JWKS whose keys the test sets, and counts its reads.
type host struct {
	mu    sync.Mutex
	keys  map[string]ed25519.PublicKey
	reads int
}

func newHost(t *testing.T, kids ...string) *host {
	h := &host{keys: map[string]ed25519.PublicKey{}}
	h.add(t, kids...)
	return h
}

func (h *host) add(t *testing.T, kids ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, kid := range kids {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		h.keys[kid] = pub
	}
}

func (h *host) count() int { h.mu.Lock(); defer h.mu.Unlock(); return h.reads }

func (h *host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.reads++
	st := jwkset.NewMemoryStorage()
	for kid, k := range h.keys {
		jwk, err := jwkset.NewJWKFromKey(k, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid}})
		if err != nil {
			panic(err)
		}
		_ = st.KeyWrite(r.Context(), jwk)
	}
	h.mu.Unlock()
	doc, err := st.JSONPublic(r.Context())
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}

// TestMissingKeyReadsTheSetAgainAtMostOncePerRefreshAfter: a key id the set
// lacks reads it again, but forged key ids within RefreshAfter of the last
// read are refused without a read, so they cannot make us hammer the host.
func TestMissingKeyReadsTheSetAgainAtMostOncePerRefreshAfter(t *testing.T) {
	h := newHost(t, "a")
	srv := httptest.NewServer(h)
	defer srv.Close()
	set := keyset.New(keyset.Options{URL: srv.URL, RefreshAfter: 30 * time.Second})
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	if _, err := set.Key(ctx, "a", t0); err != nil {
		t.Fatalf("key a: %v", err)
	}
	h.add(t, "b") // the host rotates in a new key
	for i := range 5 {
		if _, err := set.Key(ctx, "forged", t0.Add(time.Duration(i)*time.Second)); !errors.Is(err, keyset.ErrUnknownKey) {
			t.Fatalf("a forged key id: %v; want ErrUnknownKey", err)
		}
	}
	if n := h.count(); n != 1 {
		t.Fatalf("the set was read %d times for a key and five forged ids within 30 s; want once", n)
	}
	if _, err := set.Key(ctx, "b", t0.Add(30*time.Second)); err != nil {
		t.Fatalf("the rotated-in key 30 s later: %v", err)
	}
	if _, err := set.Key(ctx, "forged", t0.Add(31*time.Second)); !errors.Is(err, keyset.ErrUnknownKey) {
		t.Fatalf("a forged key id: %v; want ErrUnknownKey", err)
	}
	if n := h.count(); n != 2 {
		t.Errorf("the set was read %d times; want twice (once more for the rotated-in key)", n)
	}
}

// TestConcurrentCallersShareOneRead: callers that need the set while it is
// being read wait for that read instead of each starting one.
func TestConcurrentCallersShareOneRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHost(t, "a")
		release := make(chan struct{})
		hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			<-release // the host answers once every caller is waiting
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return rec.Result(), nil
		})}
		set := keyset.New(keyset.Options{URL: "http://127.0.0.1/jwks.json", HTTP: hc})
		now := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				_, err := set.Key(context.Background(), "a", now)
				errs <- err
			})
		}
		synctest.Wait() // all eight are blocked: on the read, or waiting for it
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("a caller: %v", err)
			}
		}
		if n := h.count(); n != 1 {
			t.Errorf("eight concurrent callers read the set %d times; want once, shared", n)
		}
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
