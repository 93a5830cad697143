package mcpauth

import (
	"context"
	"errors"
	"sync/atomic"

	"genjobs/internal/auth"
	"genjobs/internal/clock"
	"genjobs/internal/oauthtoken"
	"genjobs/internal/signing"
)

// PublicKeySource is where the access-token key's public half comes from:
// the KMS key that signs access tokens (kmssigner.Signer), which fetches it on
// first use and keeps it.
type PublicKeySource interface {
	PublicKey(ctx context.Context) (signing.PublicKey, error)
}

// Tokens verifies the access tokens of MCP connections locally (it
// implements auth.AccessTokens): ES256 by the access-token key, typ
// at+jwt, the issuer and audience of the resource the request reached, not
// expired by the injected clock. It makes no request but the key's first
// fetch (none at construction); whether the token's grant is still live is
// auth's question (through its cache).
type Tokens struct {
	Key   PublicKeySource
	Clock clock.Clock

	keys atomic.Pointer[keySet] // the key set of the key last fetched
}

type keySet struct {
	kid string
	set *signing.KeySet
}

// VerifyAccess implements auth.AccessTokens: auth.ErrInvalidAccess for a
// token that is not the resource's, an error of its own when the key
// cannot be read (an outage, not a 401).
func (t *Tokens) VerifyAccess(ctx context.Context, token string, r auth.Resource) (auth.Access, error) {
	pub, err := t.Key.PublicKey(ctx)
	if err != nil {
		return auth.Access{}, err
	}
	ks := t.keys.Load()
	if ks == nil || ks.kid != pub.ID {
		ks = &keySet{kid: pub.ID, set: signing.NewKeySet(pub)}
		t.keys.Store(ks)
	}
	c, err := oauthtoken.Verify(token, ks.set, oauthtoken.Expect{Issuer: r.Issuer, Audience: r.Audience, Now: t.Clock.Now()})
	if errors.Is(err, oauthtoken.ErrInvalid) {
		return auth.Access{}, auth.ErrInvalidAccess
	}
	if err != nil {
		return auth.Access{}, err
	}
	return auth.Access{PersonID: c.Subject, WorkspaceID: c.Workspace, GrantID: c.Grant, ClientID: c.ClientID}, nil
}
