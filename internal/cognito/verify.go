package cognito

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"genjobs/internal/clock"
	"genjobs/internal/keyset"
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
// first use, again for an unknown key id at most once per RefreshAfter,
// one read shared by the sign-ins waiting for it), iss, aud, exp and
// token_use = id.
type Verifier struct {
	o    VerifierOptions
	keys *keyset.Set
}

// NewVerifier returns a Verifier. It does no I/O.
func NewVerifier(o VerifierOptions) *Verifier {
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	return &Verifier{o: o, keys: keyset.New(keyset.Options{URL: o.URL, HTTP: o.HTTP, RefreshAfter: o.RefreshAfter})}
}

// Verify checks raw and returns who it names.
func (v *Verifier) Verify(ctx context.Context, raw string) (Identity, error) {
	var claims struct {
		jwt.RegisteredClaims
		TokenUse string `json:"token_use"`
		Email    string `json:"email"`
	}
	_, err := jwt.ParseWithClaims(raw, &claims, v.keys.Keyfunc(ctx, v.o.Clock.Now()),
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(v.o.Issuer), jwt.WithAudience(v.o.Audience),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(v.o.Clock.Now), jwt.WithLeeway(30*time.Second))
	if err != nil {
		if errors.Is(err, keyset.ErrUnreadable) {
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
