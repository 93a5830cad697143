// Command receiver is a webhook receiver that verifies every delivery the
// way docs/api.md ("Verifying a delivery") describes, and prints the jobs it gets:
//
//	go run ./events/receiver --url http://127.0.0.1:9000/hooks \
//	    --jwks http://127.0.0.1:3000/.well-known/jwks.json --issuer http://127.0.0.1:3000
//
// then create a job with -H 'X-Webhook-URL: http://127.0.0.1:9000/hooks'.
// The URL given here must be byte for byte the X-Webhook-URL: it is the
// signature's aud.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"genjobs/infra/local/endpoints"
	"genjobs/internal/signing"
)

func main() {
	self := flag.String("url", "http://127.0.0.1:9000/hooks", "this receiver's webhook `URL`, exactly as given in X-Webhook-URL")
	jwks := flag.String("jwks", endpoints.DefaultAPI()+"/.well-known/jwks.json", "the service's JWKS `URL` (default: the running make run's)")
	issuer := flag.String("issuer", "", "the service's base `URL` (the tokens' iss); empty accepts any")
	flag.Parse()
	u, err := url.Parse(*self)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "receiver: --url must be an absolute URL")
		os.Exit(2)
	}
	r := &Receiver{URL: *self, Issuer: *issuer, Keys: &JWKSCache{URL: *jwks}, Now: time.Now,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	r.OnJob = func(id string, body []byte) { fmt.Printf("%s %s\n", id, body) }
	mux := http.NewServeMux()
	mux.Handle(u.EscapedPath(), r)
	fmt.Fprintf(os.Stderr, "receiver: listening on %s for %s\n", u.Host, *self)
	if err := http.ListenAndServe(u.Host, mux); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

// Receiver verifies deliveries: the key by kid from the JWKS, the ES256
// signature, the time window, the body's hash, the audience, then the
// webhook id against those already seen.
type Receiver struct {
	URL    string // this receiver's URL, the aud it accepts
	Issuer string // the service's base URL; empty accepts any
	Keys   *JWKSCache
	Now    func() time.Time
	OnJob  func(webhookID string, body []byte)
	Log    *slog.Logger

	mu   sync.Mutex
	seen map[string]bool // webhook ids (jti) handled: retries are not handled twice
}

// MaxBody bounds a delivery: a job record is a few kilobytes.
const MaxBody = 1 << 20

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	// 1. The raw bytes: the signature covers exactly these.
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil || len(body) > MaxBody {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	// 2. No signature headers: not from the service.
	id, ts, token := r.Header.Get("X-Service-Webhook-Id"), r.Header.Get("X-Service-Webhook-Timestamp"), r.Header.Get("X-Service-Webhook-Signature")
	if id == "" || ts == "" || token == "" {
		http.Error(w, "unauthenticated", http.StatusUnauthorized)
		return
	}
	// 3-5. Key by kid, signature, iat/exp within 5 minutes, body_sha256, aud.
	claims, err := rc.verify(r.Context(), token, body)
	if err != nil {
		rc.Log.Warn("delivery refused", "webhook_id", id, "error", err.Error())
		http.Error(w, "unauthenticated", http.StatusUnauthorized)
		return
	}
	// The headers must say what the signed claims say.
	if claims.ID != id || strconv.FormatInt(claims.IssuedAt.Unix(), 10) != ts {
		http.Error(w, "headers do not match the signature", http.StatusUnauthorized)
		return
	}
	// 6. Dedupe on the webhook id: a retry of a handled delivery is a 2xx.
	rc.mu.Lock()
	if rc.seen == nil {
		rc.seen = map[string]bool{}
	}
	dup := rc.seen[claims.ID]
	rc.seen[claims.ID] = true
	rc.mu.Unlock()
	if !dup && rc.OnJob != nil {
		rc.OnJob(claims.ID, body)
	}
	w.WriteHeader(http.StatusNoContent)
}

// verify checks a token, fetching the JWKS again once when its kid is
// unknown (a key rotation).
func (rc *Receiver) verify(ctx context.Context, token string, body []byte) (signing.WebhookClaims, error) {
	want := signing.Expect{Audience: rc.URL, Issuer: rc.Issuer, Now: rc.Now(), Leeway: 30 * time.Second}
	for refresh := false; ; refresh = true {
		keys, err := rc.Keys.Get(ctx, refresh)
		if err != nil {
			return signing.WebhookClaims{}, err
		}
		c, err := signing.Verify(token, body, keys, want)
		if errors.Is(err, signing.ErrUnknownKey) && !refresh {
			continue
		}
		return c, err
	}
}

// JWKSCache fetches the service's JWKS and keeps it 5 minutes (its
// Cache-Control).
type JWKSCache struct {
	URL    string
	Client *http.Client

	mu      sync.Mutex
	keys    *signing.KeySet
	fetched time.Time
}

// Get returns the keys, fetching them when older than 5 minutes or when
// refresh asks for it.
func (c *JWKSCache) Get(ctx context.Context, refresh bool) (*signing.KeySet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys != nil && !refresh && time.Since(c.fetched) < 5*time.Minute {
		return c.keys, nil
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the JWKS: %w", err)
	}
	defer resp.Body.Close()
	doc, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the JWKS: %d %v", resp.StatusCode, err)
	}
	keys, err := signing.ParseJWKS(doc)
	if err != nil {
		return nil, err
	}
	c.keys, c.fetched = keys, time.Now()
	return keys, nil
}
