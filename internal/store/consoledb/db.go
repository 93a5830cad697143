// Package consoledb is the console's view of the service's table: one
// value made of the store packages whose records the console reads and
// writes (the console's Store). It keeps no records of its own: each
// item is read and written by its own package.
package consoledb

import (
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/sessionsdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/store/throttledb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/store/topupsdb"
)

// DB is the store (the jobs and the ledger) with the console's records:
// sessions, memberships, the accounts (workspaces, money), API tokens,
// top-ups by checkout, the sign-in throttle, webhook deliveries ("Deliver
// again") and shared styles.
type DB struct {
	*store.Store
	*sessions
	*members
	*accounts
	*tokens
	*topups
	*throttle
	*deliveries
	*styles
	*ledger
}

// The packages' DBs, named for DB's fields (their methods are DB's).
type (
	sessions   = sessionsdb.DB
	members    = membersdb.DB
	accounts   = accountsdb.DB
	tokens     = tokensdb.DB
	topups     = topupsdb.DB
	throttle   = throttledb.DB
	deliveries = deliveriesdb.DB
	styles     = stylesdb.DB
	ledger     = ledgerdb.DB
)

// New returns the console's records on st's table. It does no I/O.
func New(st *store.Store) *DB {
	return &DB{st, sessionsdb.New(st), membersdb.New(st), accountsdb.New(st), tokensdb.New(st), topupsdb.New(st),
		throttledb.New(st), deliveriesdb.New(st), stylesdb.New(st), ledgerdb.New(st)}
}
