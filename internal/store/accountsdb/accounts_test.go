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
