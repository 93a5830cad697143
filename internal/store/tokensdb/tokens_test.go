package tokensdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/storetest"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)

func TestTokensAndRevocation(t *testing.T) {
	st, ctx := storetest.New(t), context.Background()
	s := tokensdb.New(st)
	if err := accountsdb.New(st).CreateWorkspace(ctx, auth.Workspace{ID: "ws_a", Name: "A", APIEnabled: true, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	token, hash := auth.NewToken()
	if err := s.CreateToken(ctx, auth.Token{ID: "tok_1", WorkspaceID: "ws_a", Name: "ci", Hash: hash, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, auth.Token{ID: "tok_2", WorkspaceID: "ws_missing", Hash: "x", CreatedAt: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("token for a missing workspace: %v; want ErrNotFound", err)
	}
	a := auth.Authenticator{Dir: tokensdb.Directory(st)}
	p, err := a.Authenticate(ctx, "Bearer "+token)
	if err != nil || p.WorkspaceID != "ws_a" || p.TokenID != "tok_1" {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	if err := s.RevokeToken(ctx, "ws_a", "tok_1", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, "Bearer "+token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("revoked token: %v; want ErrUnauthenticated", err)
	}
	if err := s.RevokeToken(ctx, "ws_b", "tok_1", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking another workspace's token: %v; want ErrNotFound", err)
	}
}
