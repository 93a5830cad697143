// Package dynamodbwire builds the adapters on a DynamoDB client that the
// function builders share: constructors only. It links the DynamoDB client
// and no other AWS client.
package dynamodbwire

import (
	"genjobs/internal/app"
	"genjobs/internal/auth"
	"genjobs/internal/store"
	"genjobs/internal/store/tokensdb"
)

// Store is the table adapter, on a DynamoDB client of its own that follows
// d's profile: build it once per function and share it.
func Store(d app.Deps) *store.Store {
	return store.New(store.NewClient(d.AWS, d.Retries.DynamoDB), d.Table)
}

// API is what the handlers of authenticated routes are built on: the table
// adapter (Store) and the authenticator that resolves API tokens from it. The
// authenticator remembers each token and workspace it reads for up to
// auth.MaxCacheAge, for the life of the function instance: most requests
// then read neither. It records each token's last use at most once an hour
// (auth.Uses). Build one per function and share it between its handlers.
func API(d app.Deps) (*store.Store, auth.Authenticator) {
	st := Store(d)
	return st, auth.Authenticator{Dir: auth.NewCache(tokensdb.Directory(st), d.Clock), Uses: auth.NewUses(tokensdb.New(st), d.Clock)}
}
