package client

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers of a webhook delivery.
const (
	WebhookIDHeader        = "X-Service-Webhook-Id"        // stable across retries: the dedupe key
	WebhookTimestampHeader = "X-Service-Webhook-Timestamp" // unix seconds of this attempt
	WebhookSignatureHeader = "X-Service-Webhook-Signature" // an ES256 JWT over the delivery
)

// Why a WebhookVerifier refused a delivery; every error Verify returns
// matches one of these with errors.Is. A receiver answers any of them 401
// but ErrWebhookKeys, which is not the sender's doing: 503, and the service
// delivers again later (Handler does so).
var (
	ErrWebhookUnsigned   = errors.New("webhook: no signature headers")
	ErrWebhookMalformed  = errors.New("webhook: malformed signature")
	ErrWebhookUnknownKey = errors.New("webhook: signed with a key the JWKS does not list")
	ErrWebhookSignature  = errors.New("webhook: bad signature")
	ErrWebhookExpired    = errors.New("webhook: signature outside its time window")
	ErrWebhookAudience   = errors.New("webhook: signed for another webhook URL")
	ErrWebhookIssuer     = errors.New("webhook: signed by another service")
	ErrWebhookBody       = errors.New("webhook: body does not match the signature")
	// ErrWebhookKeys: the service's keys (its JWKS) could not be read, or
	// the verifier has no Audience to check.
	ErrWebhookKeys = errors.New("webhook: the service's signing keys could not be read")
)

// Webhook signature rules: a token lives 5 minutes from its iat; the JWKS
// is kept as long as its Cache-Control says (5 minutes), and fetched again
// for an unknown kid at most once in JWKSMinInterval.
const (
	webhookTokenLifetime = 5 * time.Minute
	jwksMaxAge           = 5 * time.Minute
	// JWKSMinInterval is the least time between two fetches of the JWKS:
	// a stream of deliveries signed with made-up kids costs the service
	// one fetch in that time, not one each. A delivery signed with a key
	// rotated in meanwhile is refused and delivered again later.
	JWKSMinInterval = 30 * time.Second
	// jwksFetchTimeout bounds one fetch, which no single request's
	// context ends: every verification waiting for it shares it.
	jwksFetchTimeout = 10 * time.Second
	// MaxWebhookBody bounds a delivery's body: a job record is a few
	// kilobytes.
	MaxWebhookBody = 1 << 20
)

// WebhookVerifier checks the deliveries the service POSTs to a webhook
// URL: the key by the token's kid from the service's JWKS (fetched again
// when the kid is unknown, as after a key rotation, at most once in
// JWKSMinInterval; one fetch at a time, shared by every verification that
// needs it, and none holding up those whose key is known), the ES256
// signature, iss, aud byte for byte, the iat/exp window, and the body's
// SHA-256. Handler adds the dedupe on the webhook id. Safe for concurrent
// use; set the fields before the first call.
type WebhookVerifier struct {
	// Audience is the webhook URL exactly as given with WithWebhookURL.
	Audience string
	// Issuer is the service's base URL; empty accepts any.
	Issuer string
	// JWKSURL is the service's {base_url}/.well-known/jwks.json.
	JWKSURL string
	// HTTPClient fetches the JWKS (default: a client with a 10 s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Leeway is the clock skew allowed at either end of the window
	// (default 30 s).
	Leeway time.Duration
	// OnRefusal, when set, is told why Handler answered a delivery 401.
	OnRefusal func(r *http.Request, err error)

	mu       sync.Mutex
	keys     map[string]*ecdsa.PublicKey
	fetched  time.Time // when keys were fetched
	tried    time.Time // when the last fetch started
	tryErr   error     // how it failed, or nil
	inflight *keyFetch // the fetch under way

	seenMu   sync.Mutex
	done     map[string]time.Time // webhook ids handled, and when
	handling map[string]bool      // webhook ids being handled
}

// keyFetch is one fetch of the JWKS, awaited by every verification that
// needs it.
type keyFetch struct {
	finished chan struct{}
	keys     map[string]*ecdsa.PublicKey
	err      error
}

// NewWebhookVerifier verifies deliveries to audience (the webhook URL, byte
// for byte) signed by the service at baseURL.
func NewWebhookVerifier(baseURL, audience string) *WebhookVerifier {
	baseURL = strings.TrimRight(baseURL, "/")
	return &WebhookVerifier{Audience: audience, Issuer: baseURL, JWKSURL: baseURL + "/.well-known/jwks.json"}
}

// WebhookVerifier returns a verifier for deliveries to audience signed by
// the service this client calls.
func (c *Client) WebhookVerifier(audience string) *WebhookVerifier {
	v := NewWebhookVerifier(c.baseURL, audience)
	v.HTTPClient = c.http
	return v
}

// WebhookEvent is a verified delivery.
type WebhookEvent struct {
	// ID is the webhook id (the token's jti): the same on every retry of
	// one delivery, so a receiver handles each ID once.
	ID       string
	JobID    string    // the token's sub
	IssuedAt time.Time // this attempt's time
	Job      *Job      // the body: the job record as GET /jobs/{id} shows it
	Body     []byte    // the raw body, as signed
}

// Verify checks one delivery's headers and raw body.
func (v *WebhookVerifier) Verify(ctx context.Context, h http.Header, body []byte) (*WebhookEvent, error) {
	id, ts, token := h.Get(WebhookIDHeader), h.Get(WebhookTimestampHeader), h.Get(WebhookSignatureHeader)
	if id == "" || ts == "" || token == "" {
		return nil, ErrWebhookUnsigned
	}
	if v.Audience == "" {
		return nil, fmt.Errorf("%w: the verifier has no Audience", ErrWebhookKeys)
	}
	c, err := v.verifyToken(ctx, token, body)
	if err != nil {
		return nil, err
	}
	// The headers must say what the signed claims say.
	if c.ID != id || strconv.FormatInt(c.IssuedAt, 10) != ts {
		return nil, fmt.Errorf("%w: the headers disagree with the signed claims", ErrWebhookMalformed)
	}
	var j Job
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, fmt.Errorf("%w: the body is not a job record: %v", ErrWebhookMalformed, err)
	}
	return &WebhookEvent{ID: c.ID, JobID: c.Subject, IssuedAt: time.Unix(c.IssuedAt, 0), Job: &j, Body: body}, nil
}

// VerifyRequest reads r's body (at most MaxWebhookBody bytes) and verifies
// it with r's headers.
func (v *WebhookVerifier) VerifyRequest(r *http.Request) (*WebhookEvent, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBody+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read the body: %w", ErrWebhookMalformed, err)
	}
	if len(body) > MaxWebhookBody {
		return nil, fmt.Errorf("%w: the body is over %d bytes", ErrWebhookMalformed, MaxWebhookBody)
	}
	return v.Verify(r.Context(), r.Header, body)
}

// Handler is an http.Handler for the webhook URL: it answers a delivery
// that fails verification 401 (503 when the service's keys could not be
// read), calls handle once per webhook id, and answers 204 when handle
// returns nil. A retry of a delivery handled already is answered 204
// without a second call; one that comes while the first is still being
// handled is answered 409 without a call, so that the service delivers it
// again later rather than count it delivered before handle has succeeded.
// When handle fails, the answer is 500 and the service delivers again
// later.
func (v *WebhookVerifier) Handler(handle func(context.Context, *WebhookEvent) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		ev, err := v.VerifyRequest(r)
		if err != nil {
			if v.OnRefusal != nil {
				v.OnRefusal(r, err)
			}
			if errors.Is(err, ErrWebhookKeys) {
				http.Error(w, "cannot verify now", http.StatusServiceUnavailable)
				return
			}
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		switch v.claim(ev.ID) {
		case handled:
			w.WriteHeader(http.StatusNoContent)
			return
		case handling:
			http.Error(w, "this delivery is being handled", http.StatusConflict)
			return
		}
		if err := handle(r.Context(), ev); err != nil {
			v.finish(ev.ID, false)
			http.Error(w, "not handled", http.StatusInternalServerError)
			return
		}
		v.finish(ev.ID, true)
		w.WriteHeader(http.StatusNoContent)
	})
}

// Deliveries are retried for about three days; ids are kept a little longer.
const (
	seenFor = 4 * 24 * time.Hour
	maxSeen = 100_000
)

// What claim found of a webhook id.
type claimed int

const (
	claimedNow claimed = iota // new: the caller handles it
	handling                  // another request is handling it
	handled                   // handled already
)

// claim marks id as being handled, unless it is or has been.
func (v *WebhookVerifier) claim(id string) claimed {
	v.seenMu.Lock()
	defer v.seenMu.Unlock()
	if v.done == nil {
		v.done, v.handling = map[string]time.Time{}, map[string]bool{}
	}
	if _, ok := v.done[id]; ok {
		return handled
	}
	if v.handling[id] {
		return handling
	}
	v.handling[id] = true
	return claimedNow
}

// finish ends the handling of id: recorded as handled when ok, else
// forgotten, so that the service's next delivery is handled.
func (v *WebhookVerifier) finish(id string, ok bool) {
	v.seenMu.Lock()
	defer v.seenMu.Unlock()
	delete(v.handling, id)
	if !ok {
		return
	}
	now := v.now()
	if len(v.done) >= maxSeen {
		for k, at := range v.done {
			if now.Sub(at) > seenFor {
				delete(v.done, k)
			}
		}
	}
	v.done[id] = now
}

func (v *WebhookVerifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

type webhookClaims struct {
	Issuer     string `json:"iss"`
	Audience   string `json:"aud"`
	Subject    string `json:"sub"`
	ID         string `json:"jti"`
	IssuedAt   int64  `json:"iat"`
	ExpiresAt  int64  `json:"exp"`
	BodySHA256 string `json:"body_sha256"`
}

// verifyToken checks a compact JWS: header, key, signature, then claims.
func (v *WebhookVerifier) verifyToken(ctx context.Context, token string, body []byte) (*webhookClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: not a compact JWS", ErrWebhookMalformed)
	}
	var hdr struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(parts[0], &hdr); err != nil {
		return nil, err
	}
	if hdr.Alg != "ES256" || (hdr.Typ != "" && hdr.Typ != "JWT") || hdr.Kid == "" {
		return nil, fmt.Errorf("%w: the header must be alg ES256, typ JWT, with a kid", ErrWebhookMalformed)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, fmt.Errorf("%w: an ES256 signature is 64 bytes of base64url", ErrWebhookMalformed)
	}
	key, err := v.key(ctx, hdr.Kid)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(key, digest[:], r, s) {
		return nil, ErrWebhookSignature
	}

	var c webhookClaims
	if err := decodeSegment(parts[1], &c); err != nil {
		return nil, err
	}
	if c.Issuer == "" || c.Audience == "" || c.Subject == "" || c.ID == "" || c.IssuedAt <= 0 || c.ExpiresAt <= 0 || c.BodySHA256 == "" {
		return nil, fmt.Errorf("%w: iss, aud, sub, jti, iat, exp and body_sha256 are required", ErrWebhookMalformed)
	}
	if c.Audience != v.Audience {
		return nil, ErrWebhookAudience
	}
	if v.Issuer != "" && c.Issuer != v.Issuer {
		return nil, ErrWebhookIssuer
	}
	leeway := v.Leeway
	if leeway == 0 {
		leeway = 30 * time.Second
	}
	now, iat, exp := v.now(), time.Unix(c.IssuedAt, 0), time.Unix(c.ExpiresAt, 0)
	switch {
	case !exp.After(iat) || exp.Sub(iat) > webhookTokenLifetime:
		return nil, fmt.Errorf("%w: exp must be after iat and at most %v later", ErrWebhookExpired, webhookTokenLifetime)
	case now.Add(leeway).Before(iat):
		return nil, fmt.Errorf("%w: issued in the future", ErrWebhookExpired)
	case !now.Add(-leeway).Before(exp):
		return nil, fmt.Errorf("%w: expired", ErrWebhookExpired)
	}
	sum := sha256.Sum256(body)
	if subtle.ConstantTimeCompare([]byte(c.BodySHA256), []byte(base64.RawURLEncoding.EncodeToString(sum[:]))) != 1 {
		return nil, ErrWebhookBody
	}
	return &c, nil
}

// decodeSegment decodes one base64url JSON part of a JWS.
func decodeSegment(seg string, out any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWebhookMalformed, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%w: %v", ErrWebhookMalformed, err)
	}
	return nil
}

// key returns the key named kid: from the cached JWKS when it is fresh and
// lists kid, else from a fetch of the JWKS: the one under way if there is
// one, else a new one unless the last started less than JWKSMinInterval
// ago. The lock is never held during a fetch.
func (v *WebhookVerifier) key(ctx context.Context, kid string) (*ecdsa.PublicKey, error) {
	unknown := fmt.Errorf("%w: kid %q", ErrWebhookUnknownKey, kid)
	v.mu.Lock()
	now := v.now()
	fresh := v.keys != nil && now.Sub(v.fetched) < jwksMaxAge
	if k, ok := v.keys[kid]; ok && fresh {
		v.mu.Unlock()
		return k, nil
	}
	f := v.inflight
	if f == nil {
		if !v.tried.IsZero() && now.Sub(v.tried) < JWKSMinInterval {
			err := v.tryErr
			v.mu.Unlock()
			if err != nil && !fresh {
				return nil, err
			}
			return nil, unknown
		}
		f = &keyFetch{finished: make(chan struct{})}
		v.inflight, v.tried = f, now
		go v.fetch(f)
	}
	v.mu.Unlock()
	select {
	case <-f.finished:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrWebhookKeys, ctx.Err())
	}
	if f.err != nil {
		return nil, f.err
	}
	if k, ok := f.keys[kid]; ok {
		return k, nil
	}
	return nil, unknown
}

// fetch reads the JWKS for f and keeps its keys.
func (v *WebhookVerifier) fetch(f *keyFetch) {
	ctx, cancel := context.WithTimeout(context.Background(), jwksFetchTimeout)
	defer cancel()
	f.keys, f.err = v.fetchKeys(ctx)
	if f.err != nil {
		f.err = fmt.Errorf("%w: %w", ErrWebhookKeys, f.err)
	}
	v.mu.Lock()
	if f.err == nil {
		v.keys, v.fetched = f.keys, v.now()
	}
	v.tryErr, v.inflight = f.err, nil
	v.mu.Unlock()
	close(f.finished)
}

func (v *WebhookVerifier) fetchKeys(ctx context.Context) (map[string]*ecdsa.PublicKey, error) {
	hc := v.HTTPClient
	if hc == nil {
		hc = http.DefaultClient // the fetch's context bounds it
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.JWKSURL, nil)
	if err != nil {
		return nil, fmt.Errorf("the JWKS URL: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the JWKS: %w", err)
	}
	defer resp.Body.Close()
	doc, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the JWKS: %s %v", resp.Status, err)
	}
	return parseJWKS(doc)
}

// parseJWKS keeps the document's P-256 signing keys.
func parseJWKS(doc []byte) (map[string]*ecdsa.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty, Crv, Kid, Alg, Use, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("the JWKS: %w", err)
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" || k.Kid == "" || (k.Alg != "" && k.Alg != "ES256") || (k.Use != "" && k.Use != "sig") {
			continue
		}
		x, errX := base64.RawURLEncoding.DecodeString(k.X)
		y, errY := base64.RawURLEncoding.DecodeString(k.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			continue
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			continue
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS has no ES256 key")
	}
	return keys, nil
}
