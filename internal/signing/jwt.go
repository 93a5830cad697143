package signing

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TokenLifetime is how long a webhook token is valid: exp is iat plus this.
const TokenLifetime = 300 * time.Second

// WebhookClaims is what one delivery attempt's token says (docs/api.md, "Webhooks").
type WebhookClaims struct {
	// Issuer (iss) is the service's base URL.
	Issuer string
	// Audience (aud) is the webhook URL, byte-for-byte as the client sent it.
	Audience string
	// Subject (sub) is the job id.
	Subject string
	// ID (jti) is the webhook id, the X-Service-Webhook-Id that stays the
	// same on every attempt: the receiver's dedupe key.
	ID string
	// IssuedAt (iat) is this attempt's time, the X-Service-Webhook-Timestamp;
	// whole seconds (anything finer is dropped). exp is IssuedAt plus
	// TokenLifetime.
	IssuedAt time.Time
	// Body is the exact request body; the token carries its SHA-256 as
	// body_sha256.
	Body []byte
}

// tokenClaims is the JSON claims set, members in the order of
// docs/api.md ("Webhooks"). aud is a single string (golang-jwt's RegisteredClaims
// would write an array).
type tokenClaims struct {
	Issuer     string `json:"iss"`
	Audience   string `json:"aud"`
	Subject    string `json:"sub"`
	ID         string `json:"jti"`
	IssuedAt   int64  `json:"iat"`
	ExpiresAt  int64  `json:"exp"`
	BodySHA256 string `json:"body_sha256"`
}

// tokenClaims implements jwt.Claims; Verify checks the claims itself.

func (c *tokenClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.ExpiresAt, 0)), nil
}
func (c *tokenClaims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.IssuedAt, 0)), nil
}
func (c *tokenClaims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }
func (c *tokenClaims) GetIssuer() (string, error)              { return c.Issuer, nil }
func (c *tokenClaims) GetSubject() (string, error)             { return c.Subject, nil }
func (c *tokenClaims) GetAudience() (jwt.ClaimStrings, error) {
	return jwt.ClaimStrings{c.Audience}, nil
}

// bodyHash is base64url(SHA-256(body)), unpadded.
func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// WebhookToken builds and signs the X-Service-Webhook-Signature of one
// delivery attempt: a compact JWS with header {"alg":"ES256","typ":"JWT",
// "kid"} over the claims of c. Every call signs anew (a fresh signature per
// attempt), and a signature that does not verify with the signer's public
// key is an error, never a token.
func WebhookToken(ctx context.Context, s Signer, c WebhookClaims) (string, error) {
	if c.Issuer == "" || c.Audience == "" || c.Subject == "" || c.ID == "" || c.IssuedAt.IsZero() {
		return "", errors.New("signing: a webhook token needs Issuer, Audience, Subject, ID and IssuedAt")
	}
	iat := c.IssuedAt.Unix()
	token, err := SignJWT(ctx, s, "JWT", &tokenClaims{
		Issuer:     c.Issuer,
		Audience:   c.Audience,
		Subject:    c.Subject,
		ID:         c.ID,
		IssuedAt:   iat,
		ExpiresAt:  iat + int64(TokenLifetime/time.Second),
		BodySHA256: bodyHash(c.Body),
	})
	if err != nil {
		return "", fmt.Errorf("signing: webhook token: %w", err)
	}
	return token, nil
}

// SignJWT signs claims with s as a compact JWS whose header is
// {"alg":"ES256","typ":typ,"kid"}: the webhook tokens, and the OAuth access
// tokens (typ "at+jwt", signed by a key of their own). A signature that does
// not verify with the signer's public key is an error, never a token.
func SignJWT(ctx context.Context, s Signer, typ string, claims jwt.Claims) (string, error) {
	pub, err := s.PublicKey(ctx)
	if err != nil {
		return "", err
	}
	t := jwt.NewWithClaims(&method{ctx: ctx, signer: s, pub: pub}, claims)
	t.Header["typ"] = typ
	t.Header["kid"] = pub.ID
	return t.SignedString(nil)
}

// method is a jwt.SigningMethod for ES256 that hands the signing input to a
// Signer. jwt's SigningMethod.Sign takes no context, so each token gets a
// method value of its own carrying the caller's; it is never registered with
// jwt.RegisterSigningMethod, which would make it global.
type method struct {
	ctx    context.Context
	signer Signer
	pub    PublicKey
}

func (m *method) Alg() string { return Algorithm }

// Sign ignores key: the Signer holds it.
func (m *method) Sign(signingString string, _ any) ([]byte, error) {
	sig, err := m.signer.Sign(m.ctx, []byte(signingString))
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256([]byte(signingString))
	if !verifyRaw(m.pub.Key, digest[:], sig) {
		return nil, fmt.Errorf("signing: the signature does not verify with key %s", m.pub.ID)
	}
	return sig, nil
}

// Verify is jwt's own ES256 verification.
func (m *method) Verify(signingString string, sig []byte, key any) error {
	return jwt.SigningMethodES256.Verify(signingString, sig, key)
}
