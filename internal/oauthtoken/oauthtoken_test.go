package oauthtoken_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/golang-jwt/jwt/v5"

	"genjobs/internal/oauthtoken"
	"genjobs/internal/signing"
	"genjobs/internal/signing/kmssigner"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)

const (
	base = "https://api.test"
	mcp  = "https://api.test/mcp"
)

// kmsKey is a signer on a new ECC_NIST_P256 key in moto's KMS, as the
// template's access-token key.
func kmsKey(t *testing.T) *kmssigner.Signer {
	t.Helper()
	out, err := testenv.KMS(t).CreateKey(context.Background(), &kms.CreateKeyInput{
		KeySpec: types.KeySpecEccNistP256, KeyUsage: types.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatal(err)
	}
	return kmssigner.New(testenv.KMS(t), aws.ToString(out.KeyMetadata.Arn))
}

func keySet(t *testing.T, s signing.Signer) *signing.KeySet {
	t.Helper()
	pub, err := s.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return signing.NewKeySet(pub)
}

func claims() oauthtoken.Claims {
	return oauthtoken.Claims{Issuer: base, Audience: mcp, Subject: "usr_1", Workspace: "ws_1", Scope: "jobs",
		ClientID: "oc_a", Grant: "gr_1", ID: "at_1", IssuedAt: t0}
}

func TestAnAccessTokenSignedByTheKMSKeyVerifiesForAnHour(t *testing.T) {
	key := kmsKey(t)
	tok, err := oauthtoken.Issue(context.Background(), key, claims())
	if err != nil {
		t.Fatal(err)
	}
	got, err := oauthtoken.Verify(tok, keySet(t, key), oauthtoken.Expect{Issuer: base, Audience: mcp, Now: t0.Add(59 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject != "usr_1" || got.Workspace != "ws_1" || got.Grant != "gr_1" || got.Scope != "jobs" ||
		!got.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("claims %+v", got)
	}
}

// A token for another resource, past its hour, signed by another key, or a
// token typed as a webhook token is refused.
func TestAnAccessTokenIsRefusedForAnotherAudienceAfterItsHourOrFromAnotherKey(t *testing.T) {
	ctx := context.Background()
	key, err := signing.GenerateLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := signing.GenerateLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	want := oauthtoken.Expect{Issuer: base, Audience: mcp, Now: t0.Add(time.Minute)}
	issue := func(s signing.Signer, c oauthtoken.Claims) string {
		t.Helper()
		tok, err := oauthtoken.Issue(ctx, s, c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	otherAud := claims()
	otherAud.Audience = "https://elsewhere.test/mcp"
	otherIss := claims()
	otherIss.Issuer = "https://elsewhere.test"
	// Every claim right, but typed as the webhook tokens are.
	webhook, err := signing.SignJWT(ctx, key, "JWT", jwt.MapClaims{"iss": base, "aud": mcp, "sub": "usr_1",
		"client_id": "oc_a", "workspace": "ws_1", "scope": "jobs", "grant": "gr_1", "jti": "at_1",
		"iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	expired := want
	expired.Now = t0.Add(time.Hour)
	for name, c := range map[string]struct {
		token string
		want  oauthtoken.Expect
	}{
		"another audience": {issue(key, otherAud), want},
		"another issuer":   {issue(key, otherIss), want},
		"expired":          {issue(key, claims()), expired},
		"another key":      {issue(other, claims()), want},
		"typed JWT":        {webhook, want},
		"not a JWT":        {"abc.def.ghi", want},
	} {
		if _, err := oauthtoken.Verify(c.token, signing.NewKeySet(mustPub(t, key)), c.want); !errors.Is(err, oauthtoken.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
	if _, err := oauthtoken.Verify(issue(key, claims()), signing.NewKeySet(mustPub(t, key)), want); err != nil {
		t.Errorf("the same token, good: %v", err)
	}
}

func mustPub(t *testing.T, s signing.Signer) signing.PublicKey {
	t.Helper()
	p, err := s.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}
