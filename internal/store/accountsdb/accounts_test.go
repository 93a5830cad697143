package accountsdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/storetest"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)

func TestTokensAndRevocation(t *testing.T) {
	s, ctx := accountsdb.New(storetest.New(t)), context.Background()
	if err := s.CreateWorkspace(ctx, auth.Workspace{ID: "ws_a", Name: "A", APIEnabled: true, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	token, hash := auth.NewToken()
	if err := s.CreateToken(ctx, auth.Token{ID: "tok_1", WorkspaceID: "ws_a", Name: "ci", Hash: hash, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, auth.Token{ID: "tok_2", WorkspaceID: "ws_missing", Hash: "x", CreatedAt: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("token for a missing workspace: %v; want ErrNotFound", err)
	}
	a := auth.Authenticator{Dir: s}
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

func TestTopUpIsIdempotentOnThePaymentID(t *testing.T) {
	s, ctx := accountsdb.New(storetest.New(t)), context.Background()
	if err := s.CreateWorkspace(ctx, auth.Workspace{ID: "ws_a", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		b, err := s.TopUp(ctx, "ws_a", "pay_1", 25*billing.USD, t0)
		if err != nil || b.Available != 25*billing.USD {
			t.Fatalf("top-up %d: %+v, %v; want 25 USD available", i, b, err)
		}
	}
	if _, err := s.TopUp(ctx, "ws_a", "pay_1", 10*billing.USD, t0); !errors.Is(err, accountsdb.ErrPaymentConflict) {
		t.Errorf("same payment id, other amount: %v; want ErrPaymentConflict", err)
	}
	b, err := s.TopUp(ctx, "ws_a", "pay_2", 10_500_000, t0)
	if err != nil || b.Available != 35_500_000 {
		t.Errorf("second payment: %+v, %v; want 35.5 USD", b, err)
	}
	if _, err := s.TopUp(ctx, "ws_nope", "pay_3", billing.USD*5, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("top-up of a missing workspace: %v; want ErrNotFound", err)
	}
}
