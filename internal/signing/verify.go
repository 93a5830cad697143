package signing

import (
	"crypto/ecdsa"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Why Verify refused a token. Each error it returns matches one of these
// with errors.Is. A receiver answers any of them with 401; on ErrUnknownKey
// it may fetch the JWKS again (once) first, since the key may be new.
var (
	ErrMalformed     = errors.New("signing: malformed webhook token")
	ErrUnknownKey    = errors.New("signing: no key with the token's kid")
	ErrBadSignature  = errors.New("signing: bad signature")
	ErrTimeWindow    = errors.New("signing: token outside its time window")
	ErrWrongAudience = errors.New("signing: token is for another audience")
	ErrWrongIssuer   = errors.New("signing: token from another issuer")
	ErrBodyMismatch  = errors.New("signing: body does not match body_sha256")
)

// Expect is what a receiver knows when it verifies a delivery.
type Expect struct {
	// Audience is the receiver's own webhook URL, exactly as it gave it to
	// the service; the token's aud must equal it byte for byte. Required.
	Audience string
	// Issuer is the service's base URL; empty accepts any iss.
	Issuer string
	// Now is the receiver's clock. Required.
	Now time.Time
	// Leeway is the clock skew allowed at either end of the window.
	Leeway time.Duration
}

// Verify checks a delivery as docs/api.md ("Verifying a delivery") tells receivers to: the key
// by kid from keys, the ES256 signature, the time window (iat no later than
// Now, exp after it, and exp no more than TokenLifetime after iat, each
// within Leeway), aud (and iss when expected), and body_sha256 against the
// raw body. It returns the token's claims with Body set to body; the caller
// then dedupes on ID (jti).
func Verify(token string, body []byte, keys *KeySet, want Expect) (WebhookClaims, error) {
	if want.Audience == "" || want.Now.IsZero() || keys == nil {
		return WebhookClaims{}, errors.New("signing: Verify needs keys, Expect.Audience and Expect.Now")
	}
	var c tokenClaims
	var keyErr error // the key lookup's own error, unwrapped from jwt's
	parser := jwt.NewParser(jwt.WithoutClaimsValidation(), jwt.WithStrictDecoding())
	_, err := parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		key, err := lookup(t, keys)
		keyErr = err
		return key, err
	})
	switch {
	case err == nil:
	case keyErr != nil:
		return WebhookClaims{}, keyErr
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return WebhookClaims{}, ErrBadSignature
	default:
		return WebhookClaims{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}

	if c.Issuer == "" || c.Audience == "" || c.Subject == "" || c.ID == "" ||
		c.IssuedAt <= 0 || c.ExpiresAt <= 0 || c.BodySHA256 == "" {
		return WebhookClaims{}, fmt.Errorf("%w: iss, aud, sub, jti, iat, exp and body_sha256 are required", ErrMalformed)
	}
	if c.Audience != want.Audience {
		return WebhookClaims{}, ErrWrongAudience
	}
	if want.Issuer != "" && c.Issuer != want.Issuer {
		return WebhookClaims{}, ErrWrongIssuer
	}
	iat, exp := time.Unix(c.IssuedAt, 0), time.Unix(c.ExpiresAt, 0)
	switch {
	case exp.Sub(iat) > TokenLifetime || !exp.After(iat):
		return WebhookClaims{}, fmt.Errorf("%w: exp must be after iat and at most %v later", ErrTimeWindow, TokenLifetime)
	case want.Now.Add(want.Leeway).Before(iat):
		return WebhookClaims{}, fmt.Errorf("%w: issued in the future", ErrTimeWindow)
	case !want.Now.Add(-want.Leeway).Before(exp):
		return WebhookClaims{}, fmt.Errorf("%w: expired", ErrTimeWindow)
	}
	if subtle.ConstantTimeCompare([]byte(c.BodySHA256), []byte(bodyHash(body))) != 1 {
		return WebhookClaims{}, ErrBodyMismatch
	}
	return WebhookClaims{
		Issuer:   c.Issuer,
		Audience: c.Audience,
		Subject:  c.Subject,
		ID:       c.ID,
		IssuedAt: iat,
		Body:     body,
	}, nil
}

// lookup finds the key for a parsed, not yet verified token.
func lookup(t *jwt.Token, keys *KeySet) (*ecdsa.PublicKey, error) {
	if t.Method.Alg() != Algorithm {
		return nil, fmt.Errorf("%w: alg %q", ErrMalformed, t.Method.Alg())
	}
	if typ, ok := t.Header["typ"]; ok && typ != "JWT" {
		return nil, fmt.Errorf("%w: typ %v", ErrMalformed, typ)
	}
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, fmt.Errorf("%w: no kid", ErrMalformed)
	}
	key, ok := keys.Lookup(kid)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, kid)
	}
	return key, nil
}
