package auth

import (
	"context"
	"errors"
	"strings"
)

// An MCP connection authorized by OAuth (docs/mcp.md, "Signing in with
// OAuth: what is built") presents an access token instead of an API token: a JWT the
// authorization server signed for one person, one workspace and one
// grant (the connection). Authenticate takes one where the request
// reached a protected resource (WithResource) and the Authenticator has
// an OAuth verifier: the token is verified locally (AccessTokens), then
// its grant and the person's membership of its workspace are read through
// the same Cache as API tokens, so that a revoked connection or a removed
// member is refused within MaxCacheAge. Its principal is the person
// (PersonID, Email), whose creations are billed in compute units; an
// OAuth connection never reaches the API balance.

// Resource is the protected resource a request reached: the issuer its
// access tokens must name and the audience they must be for.
type Resource struct {
	Issuer   string // the service's base URL
	Audience string // {base_url}/mcp
}

type resourceKey struct{}

// WithResource says that the request of ctx reached r, whose access tokens
// Authenticate then takes besides API tokens. Only /mcp says so: nowhere
// else is an access token a credential.
func WithResource(ctx context.Context, r Resource) context.Context {
	return context.WithValue(ctx, resourceKey{}, r)
}

func resourceOf(ctx context.Context) (Resource, bool) {
	r, ok := ctx.Value(resourceKey{}).(Resource)
	return r, ok
}

// Access is what a verified access token says.
type Access struct {
	PersonID    string // sub
	WorkspaceID string
	GrantID     string
	ClientID    string
}

// ErrInvalidAccess is what an AccessTokens answers for a token that is not
// a valid access token for the resource: forged, expired, for another
// audience or issuer, of another type. Any other error is an outage.
var ErrInvalidAccess = errors.New("auth: invalid access token")

// AccessTokens verifies access tokens without the table: signature, type,
// issuer, audience, expiry.
type AccessTokens interface {
	VerifyAccess(ctx context.Context, token string, r Resource) (Access, error)
}

// Grant is an OAuth connection as Authenticate needs it.
type Grant struct {
	ID          string
	UserID      string
	WorkspaceID string
	Revoked     bool
}

// Member is a person's membership of a workspace as Authenticate needs it.
type Member struct {
	WorkspaceID string
	UserID      string
	Email       string
}

// Connections is the storage of OAuth connections auth reads: ErrNotFound
// for an unknown grant, or a person who is not a member of the workspace.
type Connections interface {
	Grant(ctx context.Context, id string) (Grant, error)
	Member(ctx context.Context, ws, user string) (Member, error)
}

// OAuth is what Authenticate needs to take access tokens: their verifier
// and the connections' storage (a Cache, WithConnections).
type OAuth struct {
	Tokens      AccessTokens
	Connections Connections
}

// accessToken is the header's token when it is not an API token: three
// base64url parts, as a JWS compact serialization is.
func accessToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if strings.HasPrefix(token, TokenPrefix) || len(token) > maxAccessToken || strings.Count(token, ".") != 2 {
		return "", false
	}
	return token, true
}

// maxAccessToken bounds what is parsed as an access token (they are about
// 600 bytes).
const maxAccessToken = 4096

// authenticateAccess resolves an access token to the person it acts for.
func (a Authenticator) authenticateAccess(ctx context.Context, r Resource, token string) (Principal, error) {
	acc, err := a.OAuth.Tokens.VerifyAccess(ctx, token, r)
	if errors.Is(err, ErrInvalidAccess) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	g, err := a.OAuth.Connections.Grant(ctx, acc.GrantID)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	// The grant is the token's own: a token naming another person's or
	// workspace's grant is refused like a revoked one.
	if g.Revoked || g.UserID != acc.PersonID || g.WorkspaceID != acc.WorkspaceID {
		return Principal{}, ErrUnauthenticated
	}
	m, err := a.OAuth.Connections.Member(ctx, acc.WorkspaceID, acc.PersonID)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	return Principal{WorkspaceID: acc.WorkspaceID, PersonID: acc.PersonID, Email: m.Email, GrantID: acc.GrantID}, nil
}
