// Package member holds the people of the console: their memberships of
// workspaces, the role each membership gives and what a role may do, and the
// console's sign-in sessions. It imports no AWS package: the store keeps
// memberships and sessions, the console asks this package what is allowed.
package member

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Role is what a membership lets its person do in a workspace.
type Role string

// The roles, from most to least trusted. Every rule is checked on the
// server at each request (Role's methods); a page only hides what the role
// may not do.
const (
	// Owner: everything, including adding balance and managing members.
	// A workspace always keeps at least one owner.
	Owner Role = "owner"
	// Admin: tokens and API access, besides what a member sees.
	Admin Role = "admin"
	// Member: reads tokens, balance and usage; changes nothing.
	Member Role = "member"
)

// Roles lists every role, most trusted first.
var Roles = []Role{Owner, Admin, Member}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("role must be owner, admin or member, not %q", s)
}

// ManagesTokens: creating and revoking tokens, switching API access.
func (r Role) ManagesTokens() bool { return r == Owner || r == Admin }

// ManagesJobs: a job's route (the provider and model it ran on) and
// sending its webhook again.
func (r Role) ManagesJobs() bool { return r == Owner || r == Admin }

// AddsBalance: topping up the workspace's balance.
func (r Role) AddsBalance() bool { return r == Owner }

// ManagesMembers: adding and removing members, changing their roles.
func (r Role) ManagesMembers() bool { return r == Owner }

// Membership is one person's place in one workspace.
type Membership struct {
	WorkspaceID   string
	WorkspaceName string
	UserID        string // the person's Cognito user id (the ID token's sub)
	Email         string
	Role          Role
	AddedAt       time.Time
}

// Errors of membership changes and sessions.
var (
	// ErrSessionEnded: a session that is unknown, signed out or past its end.
	ErrSessionEnded = errors.New("member: the session has ended")
	ErrNotMember    = errors.New("member: not a member of the workspace")
	ErrLastOwner    = errors.New("member: a workspace keeps at least one owner")
)

// NormalizeEmail is the form an email is stored and compared in.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// ValidEmail is a light check of an address typed into a form; Cognito is
// the judge of the rest.
func ValidEmail(email string) error {
	local, domain, ok := strings.Cut(email, "@")
	if !ok || local == "" || !strings.Contains(domain, ".") || len(email) > 254 || strings.ContainsAny(email, " \t\r\n<>\"") {
		return fmt.Errorf("%q is not an email address", email)
	}
	return nil
}

// Session lifetimes: a session ends after IdleTimeout without use, and
// MaxAge after sign-in whatever its use.
const (
	IdleTimeout = 12 * time.Hour
	MaxAge      = 7 * 24 * time.Hour
	// TouchEvery is how stale a session's last use may be before a request
	// writes it again: a page view does not cost a write each time.
	TouchEvery = 5 * time.Minute
)

// Session is a signed-in browser. Only Hash, the SHA-256 of the cookie's
// value, is stored; the value itself lives in the browser alone.
type Session struct {
	Hash        string
	UserID      string
	Email       string
	WorkspaceID string // the workspace the switcher chose
	// CSRF is the token every form of the session carries.
	CSRF      string
	CreatedAt time.Time
	SeenAt    time.Time
	// Refresh is the person's Cognito refresh token, sealed with a key
	// only the browser's cookie gives (SealRefresh): the stored item alone
	// cannot be used. Empty for a session that has none to check.
	Refresh string
	// CheckedAt is when the person was last found still enabled and not
	// signed out everywhere in Cognito (at sign-in, then every
	// RecheckEvery).
	CheckedAt time.Time
}

// Ends is when the session stops working unless it is used before.
func (s Session) Ends() time.Time {
	idle := s.SeenAt.Add(IdleTimeout)
	if hard := s.CreatedAt.Add(MaxAge); hard.Before(idle) {
		return hard
	}
	return idle
}

// Valid says whether the session still works at now.
func (s Session) Valid(now time.Time) bool { return now.Before(s.Ends()) }

// NeedsTouch says whether a request at now should record the use.
func (s Session) NeedsTouch(now time.Time) bool { return now.Sub(s.SeenAt) >= TouchEvery }

// NewSecret returns 32 random bytes as base64url: a session cookie's value
// or a CSRF token.
func NewSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("member: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// HashSecret is the stored form of a session's cookie value.
func HashSecret(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}
