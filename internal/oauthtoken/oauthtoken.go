// Package oauthtoken is the OAuth access token of an MCP connection: a JWT
// (RFC 9068's profile, typ "at+jwt") signed ES256 by the access-token key,
// a KMS key of its own (internal/signing), and its verification.
//
// The claims: iss the service's base URL, aud the MCP endpoint
// ({base_url}/mcp, RFC 8707's resource), sub the person, workspace the
// workspace the connection bills, scope, client_id, grant (the connection,
// whose revocation ends the token early), jti, iat, and exp an hour after
// iat.
package oauthtoken

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"genjobs/internal/signing"
)

// Lifetime is how long an access token is valid.
const Lifetime = time.Hour

// Type is the JWS typ of an access token (RFC 9068): a webhook token, signed
// by another key and typed "JWT", is never taken for one.
const Type = "at+jwt"

// Claims are what an access token says.
type Claims struct {
	Issuer    string
	Audience  string
	Subject   string // the person
	Workspace string
	Scope     string
	ClientID  string
	Grant     string
	ID        string // jti
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// wire is the JSON claims set.
type wire struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	Audience  string `json:"aud"`
	ClientID  string `json:"client_id"`
	Workspace string `json:"workspace"`
	Scope     string `json:"scope"`
	Grant     string `json:"grant"`
	ID        string `json:"jti"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
}

func (c *wire) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.ExpiresAt, 0)), nil
}
func (c *wire) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.IssuedAt, 0)), nil
}
func (c *wire) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }
func (c *wire) GetIssuer() (string, error)              { return c.Issuer, nil }
func (c *wire) GetSubject() (string, error)             { return c.Subject, nil }
func (c *wire) GetAudience() (jwt.ClaimStrings, error)  { return jwt.ClaimStrings{c.Audience}, nil }

// Issue signs an access token for c with s. ExpiresAt is set from IssuedAt
// (whole seconds) and Lifetime; every other claim is required.
func Issue(ctx context.Context, s signing.Signer, c Claims) (string, error) {
	if c.Issuer == "" || c.Audience == "" || c.Subject == "" || c.Workspace == "" || c.ClientID == "" ||
		c.Grant == "" || c.ID == "" || c.IssuedAt.IsZero() {
		return "", errors.New("oauthtoken: iss, aud, sub, workspace, client_id, grant, jti and iat are required")
	}
	iat := c.IssuedAt.Unix()
	return signing.SignJWT(ctx, s, Type, &wire{
		Issuer: c.Issuer, Subject: c.Subject, Audience: c.Audience, ClientID: c.ClientID,
		Workspace: c.Workspace, Scope: c.Scope, Grant: c.Grant, ID: c.ID,
		IssuedAt: iat, ExpiresAt: iat + int64(Lifetime/time.Second),
	})
}

// ErrInvalid marks a token Verify refused: the resource answers 401 with
// error="invalid_token", whatever the reason the error's text gives.
var ErrInvalid = errors.New("oauthtoken: invalid access token")

// Expect is what the resource knows of its tokens.
type Expect struct {
	Issuer   string    // the service's base URL
	Audience string    // {base_url}/mcp
	Now      time.Time // the injected clock's now
	// AnyTime skips the time checks: the revocation endpoint revokes an
	// expired token's grant too.
	AnyTime bool
}

// Verify checks token: ES256 with a key of keys (by kid), typ at+jwt, iss,
// aud, exp after Now (and iat not after it), and every claim present. It
// does not know whether the grant is still live: the caller asks the store
// (through its cache).
func Verify(token string, keys *signing.KeySet, want Expect) (Claims, error) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{signing.Algorithm}),
		jwt.WithIssuer(want.Issuer), jwt.WithAudience(want.Audience),
		jwt.WithStrictDecoding(),
	}
	if want.AnyTime {
		opts = append(opts, jwt.WithoutClaimsValidation())
	} else {
		opts = append(opts, jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(func() time.Time { return want.Now }))
	}
	var c wire
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if typ, _ := t.Header["typ"].(string); typ != Type {
			return nil, fmt.Errorf("typ %q", typ)
		}
		kid, _ := t.Header["kid"].(string)
		key, ok := keys.Lookup(kid)
		if !ok {
			return nil, fmt.Errorf("no key %q", kid)
		}
		return key, nil
	})
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if want.AnyTime && (c.Issuer != want.Issuer || c.Audience != want.Audience) {
		return Claims{}, fmt.Errorf("%w: another issuer or audience", ErrInvalid)
	}
	if c.Subject == "" || c.Workspace == "" || c.ClientID == "" || c.Grant == "" || c.ID == "" {
		return Claims{}, fmt.Errorf("%w: sub, workspace, client_id, grant and jti are required", ErrInvalid)
	}
	return Claims{
		Issuer: c.Issuer, Audience: c.Audience, Subject: c.Subject, Workspace: c.Workspace, Scope: c.Scope,
		ClientID: c.ClientID, Grant: c.Grant, ID: c.ID,
		IssuedAt: time.Unix(c.IssuedAt, 0).UTC(), ExpiresAt: time.Unix(c.ExpiresAt, 0).UTC(),
	}, nil
}
