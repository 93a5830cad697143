// Package auth turns an Authorization header into the workspace it speaks for.
// Tokens are stored only as their SHA-256; the token itself is shown once.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// TokenPrefix starts every API token, so that leaked tokens are easy to spot.
const TokenPrefix = "gjs_"

// tokenLen is the prefix plus 43 base64url characters of 32 random bytes.
const tokenLen = len(TokenPrefix) + 43

// Reasons a request is refused with 401; the HTTP layer words them.
var (
	ErrUnauthenticated = errors.New("auth: missing, malformed, unknown or revoked token")
	ErrAPIDisabled     = errors.New("auth: API access is not enabled for the workspace")
)

// ErrNotFound is what a Directory answers for an unknown token or workspace.
var ErrNotFound = errors.New("not found")

// Workspace is a tenant: its jobs, balance and styles belong to it alone.
type Workspace struct {
	ID            string
	Name          string
	APIEnabled    bool
	MaxConcurrent int // non-terminal jobs at once; one more is a 429
	MaxRunning    int // jobs past backlogged at once; the rest wait as backlogged
	CreatedAt     time.Time
}

// Default limits (docs/api.md, "Limits").
const (
	DefaultMaxConcurrent = 20
	DefaultMaxRunning    = 5
)

// Token is a stored API token: its hash, never its value.
type Token struct {
	ID          string
	WorkspaceID string
	Name        string
	Hash        string // hex SHA-256 of the token
	Prefix      string // the token's first characters (Prefix), to tell tokens apart
	CreatedAt   time.Time
	CreatedBy   string // who made it: a console user's email, empty for the operator CLI
	RevokedAt   *time.Time
	// LastUsedAt is the hour of the token's last use by the API (UseRecorder).
	LastUsedAt *time.Time
}

// Principal is who a request acts as: the API's own user in a workspace.
type Principal struct {
	WorkspaceID string
	TokenID     string
	TokenName   string // the token's name, what a job's details show as its creator
	// PersonID and Email name a signed-in person a request acts for, in
	// process (httpapi.Origin): then there is no token, and the person's
	// creations are billed in compute units.
	PersonID string
	Email    string
	// GrantID is the OAuth connection an access token belongs to, for a
	// person acting through one (docs/mcp.md); empty otherwise.
	GrantID string
}

// UserID is the API's user identity inside its workspace (docs/api.md, "Styles").
func (p Principal) UserID() string { return "api:" + p.WorkspaceID }

// NewToken returns a fresh token and the hash to store.
func NewToken() (token, hash string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, Hash(token)
}

// PrefixLen is how much of a token is kept in the clear: "gjs_" and four
// of its random characters, enough to tell a workspace's tokens apart.
const PrefixLen = len(TokenPrefix) + 4

// Prefix is the part of token kept to show it ("gjs_abcd").
func Prefix(token string) string { return token[:min(len(token), PrefixLen)] }

// Hash is the stored form of a token.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewID returns prefix and 24 random hex digits: ids of workspaces and tokens.
func NewID(prefix string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	return prefix + hex.EncodeToString(b[:])
}

// Directory is the storage auth reads. Reads must be strongly consistent so
// that a revocation takes effect at once, or, through a Cache, within
// MaxCacheAge.
type Directory interface {
	TokenByHash(ctx context.Context, hash string) (Token, error)
	Workspace(ctx context.Context, id string) (Workspace, error)
}

// Authenticator checks bearer tokens against a Directory.
type Authenticator struct {
	Dir Directory
	// Uses, when set, records each token's last use (at most once an hour).
	Uses *Uses
	// OAuth, when set, lets Authenticate take the access tokens of OAuth
	// connections where the request reached their resource (WithResource).
	OAuth *OAuth
}

// Authenticate returns the principal of an Authorization header value, or
// ErrUnauthenticated / ErrAPIDisabled, or a storage error (a 500, not a 401).
// The header's bearer token is an API token or, at a protected resource
// with OAuth set, an access token (oauth.go): the person it acts for.
func (a Authenticator) Authenticate(ctx context.Context, header string) (Principal, error) {
	token, ok := bearer(header)
	if !ok {
		if r, at := resourceOf(ctx); at && a.OAuth != nil {
			if access, ok := accessToken(header); ok {
				return a.authenticateAccess(ctx, r, access)
			}
		}
		return Principal{}, ErrUnauthenticated
	}
	t, err := a.Dir.TokenByHash(ctx, Hash(token))
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	if t.RevokedAt != nil {
		return Principal{}, ErrUnauthenticated
	}
	w, err := a.Dir.Workspace(ctx, t.WorkspaceID)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	if !w.APIEnabled {
		return Principal{}, ErrAPIDisabled
	}
	p := Principal{WorkspaceID: w.ID, TokenID: t.ID, TokenName: t.Name}
	if a.Uses != nil {
		// The last-used hour is a hint for people: failing to write it must
		// not fail the request (Uses tries again the next hour).
		_ = a.Uses.Record(ctx, p)
	}
	return p, nil
}

// bearer extracts a well-formed token from "Bearer <token>"; the scheme is
// case-insensitive (RFC 9110), the token is not.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if len(token) != tokenLen || !strings.HasPrefix(token, TokenPrefix) {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(token[len(TokenPrefix):]); err != nil {
		return "", false
	}
	return token, true
}
