package auth

import (
	"context"
	"sync"
	"time"

	"genjobs/internal/clock"
)

// UseStore records a token's last use (store.Store): a conditional write
// of the hour, which refuses an hour already recorded.
type UseStore interface {
	RecordTokenUse(ctx context.Context, ws, tokenID string, at time.Time) (bool, error)
}

// Uses records when tokens are used, for the console's "last used" column,
// at most once an hour per token and function instance: the instance
// remembers the hour it last tried, and the store's conditional write keeps
// the item to one write an hour whatever the number of instances. So the
// API's request path gains at most one write per token an hour. Safe for
// concurrent use.
type Uses struct {
	store UseStore
	clock clock.Clock
	mu    sync.Mutex
	tried map[string]time.Time // token id -> the hour last tried
}

// NewUses records uses in st by the time c tells.
func NewUses(st UseStore, c clock.Clock) *Uses {
	return &Uses{store: st, clock: c, tried: map[string]time.Time{}}
}

// Record notes that p's token was used now. A failed write is not retried
// before the next hour: the column is a hint, and an outage must not turn
// every request into a write.
func (u *Uses) Record(ctx context.Context, p Principal) error {
	hour := u.clock.Now().UTC().Truncate(time.Hour)
	u.mu.Lock()
	if last, ok := u.tried[p.TokenID]; ok && !last.Before(hour) {
		u.mu.Unlock()
		return nil
	}
	if len(u.tried) >= maxCached {
		clear(u.tried)
	}
	u.tried[p.TokenID] = hour
	u.mu.Unlock()
	_, err := u.store.RecordTokenUse(ctx, p.WorkspaceID, p.TokenID, hour)
	return err
}
