package sessionsdb_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"genjobs/internal/store"
	"genjobs/internal/store/sessionsdb"
	"genjobs/internal/store/storetest"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)

// A value held for one display is had by the first take only, by its own
// session only, and not at all once its end has come, whatever TTL has
// done yet.
func TestAValueShownOnceIsTakenOnceBeforeItsEnd(t *testing.T) {
	d, ctx := sessionsdb.New(storetest.New(t)), context.Background()
	sealed := []byte("sealed bytes")
	if err := d.HoldOnce(ctx, "sess_a", "token:tok_1", sealed, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.TakeOnce(ctx, "sess_b", "token:tok_1", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another session's take: %v; want ErrNotFound", err)
	}
	got, err := d.TakeOnce(ctx, "sess_a", "token:tok_1", t0.Add(59*time.Second))
	if err != nil || !bytes.Equal(got, sealed) {
		t.Fatalf("the first take: %q, %v; want what was held", got, err)
	}
	if _, err := d.TakeOnce(ctx, "sess_a", "token:tok_1", t0.Add(59*time.Second)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the second take: %v; want ErrNotFound", err)
	}

	if err := d.HoldOnce(ctx, "sess_a", "token:tok_2", sealed, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := d.TakeOnce(ctx, "sess_a", "token:tok_2", t0.Add(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a take at the end: %q, %v; want ErrNotFound", got, err)
	}
	if _, err := d.TakeOnce(ctx, "sess_a", "token:tok_2", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a late take left the value: %v; want it gone", err)
	}
}
