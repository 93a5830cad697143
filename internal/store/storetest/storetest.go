// Package storetest gives a test a table of its own on DynamoDB Local
// (internal/testenv), so that each aggregate package's tests start empty.
// The test binary's TestMain must call testenv.Main.
package storetest

import (
	"context"
	"testing"

	"genjobs/internal/store"
	"genjobs/internal/store/schema"
	"genjobs/internal/testenv"
)

// New creates a table named for the test and returns a store on it.
func New(t testing.TB) *store.Store {
	t.Helper()
	db := testenv.DynamoDB(t)
	name := testenv.UniqueName(t, "tbl")
	if err := schema.CreateTable(context.Background(), db, name); err != nil {
		t.Fatal(err)
	}
	return store.New(db, name)
}
