package stylesdb_test

import (
	"context"
	"testing"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)

// addWorkspace creates a workspace: a user's style needs its own.
func addWorkspace(t *testing.T, s *store.Store, id string) {
	t.Helper()
	err := accountsdb.New(s).CreateWorkspace(context.Background(), auth.Workspace{ID: id, Name: id, APIEnabled: true,
		MaxConcurrent: 20, MaxRunning: 5, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
}
