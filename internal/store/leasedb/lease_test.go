package leasedb_test

import (
	"context"
	"testing"
	"time"

	"genjobs/internal/store/leasedb"
	"genjobs/internal/store/storetest"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)

func TestLeaseKeepsASecondHolderOutUntilItLapsesOrIsReleased(t *testing.T) {
	s, ctx := leasedb.New(storetest.New(t)), context.Background()
	until := t0.Add(70 * time.Second)
	take := func(holder string, now time.Time) bool {
		t.Helper()
		ok, err := s.TakeLease(ctx, "sweeper", holder, now.Add(70*time.Second), now)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !take("a", t0) {
		t.Fatal("a free lease was refused")
	}
	if take("b", t0.Add(30*time.Second)) {
		t.Error("b took the lease a holds")
	}
	// A retry of a's take (its answer lost) succeeds: it is a's own.
	if !take("a", t0) {
		t.Error("a's retry was refused")
	}
	if !take("b", until) {
		t.Error("b was refused a lapsed lease")
	}
	// a's release after b took over leaves b's lease alone.
	if err := s.ReleaseLease(ctx, "sweeper", "a", until.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if take("c", until.Add(2*time.Second)) {
		t.Error("c took b's lease after a's stale release")
	}
	if err := s.ReleaseLease(ctx, "sweeper", "b", until.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !take("c", until.Add(4*time.Second)) {
		t.Error("c was refused a released lease")
	}
}
