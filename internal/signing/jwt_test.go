package signing_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"genjobs/internal/signing"
)

func mustPub(t testing.TB, k *ecdsa.PublicKey) signing.PublicKey {
	t.Helper()
	p, err := signing.NewPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLocal(t testing.TB) *signing.LocalKey {
	t.Helper()
	k, err := signing.GenerateLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pubOf(t testing.TB, s signing.Signer) signing.PublicKey {
	t.Helper()
	p, err := s.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	issuer   = "https://api.example.com"
	audience = "https://hooks.example.com/in?x=1&y=%2F,z" // byte-for-byte, comma and escapes kept
)

func claims(iat time.Time, body []byte) signing.WebhookClaims {
	return signing.WebhookClaims{
		Issuer:   issuer,
		Audience: audience,
		Subject:  "job_01JD0000000000000000000000",
		ID:       "wh_01JD0000000000000000000001",
		IssuedAt: iat,
		Body:     body,
	}
}

func segment(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(parts[i])
	if err != nil {
		t.Fatalf("segment %d: %v", i, err)
	}
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("segment %d: %v", i, err)
	}
	return m
}

// The header and claims are exactly those of API-DECISIONS 8.
func TestWebhookTokenShape(t *testing.T) {
	k := mustLocal(t)
	body := []byte(`{"id":"job_1","status":"completed"}`)
	iat := time.Unix(1_800_000_000, 999_000_000) // the fraction is dropped
	tok, err := signing.WebhookToken(context.Background(), k, claims(iat, body))
	if err != nil {
		t.Fatal(err)
	}
	header := segment(t, tok, 0)
	wantHeader := map[string]any{"alg": "ES256", "typ": "JWT", "kid": pubOf(t, k).ID}
	if !reflect.DeepEqual(header, wantHeader) {
		t.Fatalf("header %v, want %v", header, wantHeader)
	}
	sum := sha256.Sum256(body)
	wantClaims := map[string]any{
		"iss":         issuer,
		"aud":         audience, // a string, not an array
		"sub":         "job_01JD0000000000000000000000",
		"jti":         "wh_01JD0000000000000000000001",
		"iat":         json.Number("1800000000"),
		"exp":         json.Number("1800000300"),
		"body_sha256": base64.RawURLEncoding.EncodeToString(sum[:]),
	}
	if got := segment(t, tok, 1); !reflect.DeepEqual(got, wantClaims) {
		t.Fatalf("claims %v, want %v", got, wantClaims)
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(strings.Split(tok, ".")[2])
	if err != nil || len(sig) != 64 {
		t.Fatalf("signature: %d bytes, %v; want 64 bytes of r||s", len(sig), err)
	}
	// jwt's own ES256 verifies it too.
	pub := pubOf(t, k)
	if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return pub.Key, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithoutClaimsValidation()); err != nil {
		t.Fatalf("golang-jwt refuses the token: %v", err)
	}
}

// Our signing method is never registered: golang-jwt's ES256 stays its own.
func TestSigningMethodNotRegistered(t *testing.T) {
	if _, err := signing.WebhookToken(context.Background(), mustLocal(t), claims(time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	if m := jwt.GetSigningMethod("ES256"); m != jwt.SigningMethodES256 {
		t.Fatalf("ES256 in jwt's registry is %T %v, want jwt.SigningMethodES256", m, m)
	}
}

// brokenSigner signs with one key and publishes another.
type brokenSigner struct{ signing.Signer }

func (b brokenSigner) Sign(ctx context.Context, message []byte) ([]byte, error) {
	other, err := signing.GenerateLocalKey()
	if err != nil {
		return nil, err
	}
	return other.Sign(ctx, message)
}

func TestWebhookTokenRefuses(t *testing.T) {
	ctx := context.Background()
	if _, err := signing.WebhookToken(ctx, brokenSigner{mustLocal(t)}, claims(time.Now(), nil)); err == nil {
		t.Fatal("a signature that does not verify became a token")
	}
	c := claims(time.Now(), nil)
	c.Audience = ""
	if _, err := signing.WebhookToken(ctx, mustLocal(t), c); err == nil {
		t.Fatal("a token without aud")
	}
	if _, err := signing.WebhookToken(ctx, mustLocal(t), claims(time.Time{}, nil)); err == nil {
		t.Fatal("a token without iat")
	}
}

func TestVerifyRoundTrip(t *testing.T) {
	k := mustLocal(t)
	body := []byte(`{"id":"job_1"}`)
	iat := time.Unix(1_800_000_000, 0)
	c := claims(iat, body)
	tok, err := signing.WebhookToken(context.Background(), k, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := signing.Verify(tok, body, signing.NewKeySet(pubOf(t, k)), signing.Expect{Audience: audience, Issuer: issuer, Now: iat.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("Verify returned %+v, want %+v", got, c)
	}
}

// forge signs arbitrary header and claims with priv using golang-jwt's own
// ES256, to make tokens WebhookToken never would.
func forge(t *testing.T, priv *ecdsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	tk := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims(claims))
	tk.Header = header
	s, err := tk.SignedString(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifyRefuses(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := signing.NewLocalKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pub := pubOf(t, k)
	keys := signing.NewKeySet(pub)
	body := []byte(`{"id":"job_1","status":"failed"}`)
	iat := time.Unix(1_800_000_000, 0)
	good, err := signing.WebhookToken(context.Background(), k, claims(iat, body))
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := signing.WebhookToken(context.Background(), mustLocal(t), claims(iat, body))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sig[40] ^= 1
	flipped := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig)

	hdr := map[string]any{"alg": "ES256", "typ": "JWT", "kid": pub.ID}
	cl := func(edit func(map[string]any)) map[string]any {
		sum := sha256.Sum256(body)
		m := map[string]any{"iss": issuer, "aud": audience, "sub": "job_1", "jti": "wh_1",
			"iat": iat.Unix(), "exp": iat.Unix() + 300, "body_sha256": base64.RawURLEncoding.EncodeToString(sum[:])}
		edit(m)
		return m
	}
	hmac := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(cl(func(map[string]any) {})))
	hmac.Header["kid"] = pub.ID
	hs256, err := hmac.SignedString([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}

	at := func(d time.Duration) signing.Expect {
		return signing.Expect{Audience: audience, Issuer: issuer, Now: iat.Add(d)}
	}
	cases := []struct {
		name  string
		token string
		body  []byte
		want  signing.Expect
		err   error
	}{
		{"good at iat", good, body, at(0), nil},
		{"good a second before exp", good, body, at(299 * time.Second), nil},
		{"expired at exp", good, body, at(300 * time.Second), signing.ErrTimeWindow},
		{"issued in the future", good, body, at(-time.Second), signing.ErrTimeWindow},
		{"leeway covers a skewed clock", good, body, signing.Expect{Audience: audience, Now: iat.Add(-5 * time.Second), Leeway: 10 * time.Second}, nil},
		{"another body", good, []byte(`{"id":"job_1","status":"completed"}`), at(0), signing.ErrBodyMismatch},
		{"empty body", good, nil, at(0), signing.ErrBodyMismatch},
		{"another audience", good, body, signing.Expect{Audience: audience + "&", Now: iat}, signing.ErrWrongAudience},
		{"another issuer", good, body, signing.Expect{Audience: audience, Issuer: "https://evil.example", Now: iat}, signing.ErrWrongIssuer},
		{"any issuer when none expected", good, body, signing.Expect{Audience: audience, Now: iat}, nil},
		{"unknown kid", stranger, body, at(0), signing.ErrUnknownKey},
		{"flipped signature bit", flipped, body, at(0), signing.ErrBadSignature},
		{"HS256", hs256, body, at(0), signing.ErrMalformed},
		{"alg none", "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + ".", body, at(0), signing.ErrMalformed},
		{"not a JWS", "abc", body, at(0), signing.ErrMalformed},
		{"no kid", forge(t, priv, map[string]any{"alg": "ES256", "typ": "JWT"}, cl(func(map[string]any) {})), body, at(0), signing.ErrMalformed},
		{"typ not JWT", forge(t, priv, map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": pub.ID}, cl(func(map[string]any) {})), body, at(0), signing.ErrMalformed},
		{"forged but well-formed", forge(t, priv, hdr, cl(func(map[string]any) {})), body, at(0), nil},
		{"aud as an array", forge(t, priv, hdr, cl(func(m map[string]any) { m["aud"] = []string{audience} })), body, at(0), signing.ErrMalformed},
		{"no jti", forge(t, priv, hdr, cl(func(m map[string]any) { delete(m, "jti") })), body, at(0), signing.ErrMalformed},
		{"no exp", forge(t, priv, hdr, cl(func(m map[string]any) { delete(m, "exp") })), body, at(0), signing.ErrMalformed},
		{"no body_sha256", forge(t, priv, hdr, cl(func(m map[string]any) { delete(m, "body_sha256") })), body, at(0), signing.ErrMalformed},
		{"lifetime over 300 s", forge(t, priv, hdr, cl(func(m map[string]any) { m["exp"] = iat.Unix() + 301 })), body, at(0), signing.ErrTimeWindow},
		{"exp before iat", forge(t, priv, hdr, cl(func(m map[string]any) { m["exp"] = iat.Unix() - 1 })), body, at(0), signing.ErrTimeWindow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := signing.Verify(tc.token, tc.body, keys, tc.want)
			if tc.err == nil && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
		})
	}
	if _, err := signing.Verify(good, body, keys, signing.Expect{Now: iat}); err == nil {
		t.Fatal("Verify without an expected audience accepted a token")
	}
}
