package cognito

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"genjobs/internal/clock"
)

// ErrBadToken: an ID token that fails verification. Never shown to a
// person as such: sign-in fails with a fixed message and the reason is logged.
var ErrBadToken = errors.New("cognito: the ID token does not verify")

// VerifierOptions configure a Verifier. New fills URL, Issuer and Audience.
type VerifierOptions struct {
	URL      string // the pool's JWKS
	Issuer   string // the tokens' iss
	Audience string // the app client's id: the ID token's aud
	Clock    clock.Clock
	HTTP     *http.Client // nil: a client with a 5 s timeout
	// RefreshAfter is the least time between two reads of the JWKS for an
	// unknown key id, so that forged kids cannot make us hammer it.
	RefreshAfter time.Duration
}

// Verifier checks ID tokens: RS256 by a key of the pool's JWKS (read at
// first use, again for an unknown key id at most once per RefreshAfter),
// iss, aud, exp and token_use = id.
type Verifier struct {
	o       VerifierOptions
	mu      sync.Mutex
	keys    map[string]*rsa.PublicKey
	fetched time.Time
}

// NewVerifier returns a Verifier. It does no I/O.
func NewVerifier(o VerifierOptions) *Verifier {
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	if o.RefreshAfter == 0 {
		o.RefreshAfter = 30 * time.Second
	}
	return &Verifier{o: o}
}

// Verify checks raw and returns who it names.
func (v *Verifier) Verify(ctx context.Context, raw string) (Identity, error) {
	var claims struct {
		jwt.RegisteredClaims
		TokenUse string `json:"token_use"`
		Email    string `json:"email"`
	}
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return v.key(ctx, kid)
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(v.o.Issuer), jwt.WithAudience(v.o.Audience),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(v.o.Clock.Now), jwt.WithLeeway(30*time.Second))
	if err != nil {
		if errors.Is(err, errJWKS) {
			return Identity{}, err
		}
		return Identity{}, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	switch {
	case claims.TokenUse != "id":
		return Identity{}, fmt.Errorf("%w: token_use is %q, not id", ErrBadToken, claims.TokenUse)
	case claims.Subject == "" || claims.Email == "":
		return Identity{}, fmt.Errorf("%w: no sub or email", ErrBadToken)
	}
	return Identity{UserID: claims.Subject, Email: claims.Email}, nil
}

var errJWKS = errors.New("cognito: the JWKS could not be read")

func (v *Verifier) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	if v.keys != nil && v.o.Clock.Now().Sub(v.fetched) < v.o.RefreshAfter {
		return nil, fmt.Errorf("unknown key id %q", kid)
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errJWKS, err)
	}
	v.keys, v.fetched = keys, v.o.Clock.Now()
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("unknown key id %q", kid)
}

func (v *Verifier) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.o.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.o.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", v.o.URL, resp.Status)
	}
	var set struct {
		Keys []struct {
			Kid, Kty, N, E string
		} `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("decode %s: %w", v.o.URL, err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			return nil, fmt.Errorf("%s: key %q is not a valid RSA key", v.o.URL, k.Kid)
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	return keys, nil
}
