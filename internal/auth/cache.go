package auth

import (
	"context"
	"sync"
	"time"

	"genjobs/internal/clock"
)

// MaxCacheAge is the longest a token's or a workspace's record may be
// remembered: a revoked token, or a workspace whose API access is disabled,
// is refused at most this long after the change.
const MaxCacheAge = 5 * time.Second

// maxCached bounds each of the cache's maps: past it, expired entries are
// dropped, then everything (a function instance serves few workspaces; a
// flood of distinct tokens is unknown ones, which are not remembered).
const maxCached = 4096

// Cache is a Directory that remembers what another Directory answered, for
// MaxCacheAge, so that a function instance reads a token and its workspace
// once every 5 seconds instead of on every request. WithConnections makes
// it the Connections of OAuth access tokens too: a grant and a membership
// are remembered as long, no longer. Only records found are
// remembered: an unknown token is asked about every time (a token just
// created works at once), and so is anything after a storage error. Safe
// for concurrent use.
type Cache struct {
	dir        Directory
	clock      clock.Clock
	mu         sync.Mutex
	tokens     map[string]cached[Token]
	workspaces map[string]cached[Workspace]

	conns   Connections // nil: Grant and Member find nothing
	grants  map[string]cached[Grant]
	members map[string]cached[Member]
}

type cached[T any] struct {
	v       T
	expires time.Time
}

// NewCache remembers dir's answers by the time c tells.
func NewCache(dir Directory, c clock.Clock) *Cache {
	return &Cache{dir: dir, clock: c, tokens: map[string]cached[Token]{}, workspaces: map[string]cached[Workspace]{},
		grants: map[string]cached[Grant]{}, members: map[string]cached[Member]{}}
}

// WithConnections makes c remember conns' answers as well, and returns c.
// Set it before c is used.
func (c *Cache) WithConnections(conns Connections) *Cache {
	c.conns = conns
	return c
}

// Grant implements Connections: a revoked grant is refused at most
// MaxCacheAge after its revocation.
func (c *Cache) Grant(ctx context.Context, id string) (Grant, error) {
	if c.conns == nil {
		return Grant{}, ErrNotFound
	}
	return remember(c, c.grants, id, func() (Grant, error) { return c.conns.Grant(ctx, id) })
}

// Member implements Connections: a removed member is refused at most
// MaxCacheAge after the removal.
func (c *Cache) Member(ctx context.Context, ws, user string) (Member, error) {
	if c.conns == nil {
		return Member{}, ErrNotFound
	}
	return remember(c, c.members, ws+"\x00"+user, func() (Member, error) { return c.conns.Member(ctx, ws, user) })
}

// TokenByHash implements Directory.
func (c *Cache) TokenByHash(ctx context.Context, hash string) (Token, error) {
	return remember(c, c.tokens, hash, func() (Token, error) { return c.dir.TokenByHash(ctx, hash) })
}

// Workspace implements Directory.
func (c *Cache) Workspace(ctx context.Context, id string) (Workspace, error) {
	return remember(c, c.workspaces, id, func() (Workspace, error) { return c.dir.Workspace(ctx, id) })
}

func remember[T any](c *Cache, m map[string]cached[T], key string, read func() (T, error)) (T, error) {
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := m[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.v, nil
	}
	v, err := read()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(m) >= maxCached {
		for k, e := range m {
			if !now.Before(e.expires) {
				delete(m, k)
			}
		}
		if len(m) >= maxCached {
			clear(m)
		}
	}
	// Timed from before the read: the record is no older than this.
	m[key] = cached[T]{v: v, expires: now.Add(MaxCacheAge)}
	return v, nil
}
