package assetsdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"genjobs/internal/asset"
	"genjobs/internal/store"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/store/storetest"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)

func TestAssetRoundTrip(t *testing.T) {
	s, ctx := assetsdb.New(storetest.New(t)), context.Background()
	id := asset.NewID()
	a := asset.Asset{
		ID: id, WorkspaceID: "ws_a", Key: asset.Key("ws_a", id), ContentType: asset.WebP,
		Size: asset.MaxUploadBytes, CreatedAt: t0.Add(120 * time.Millisecond),
	}
	if err := s.CreateAsset(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.Asset(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got != a {
		t.Errorf("read back %+v; wrote %+v", got, a)
	}
	again := a
	again.WorkspaceID = "ws_b"
	if err := s.CreateAsset(ctx, again); !errors.Is(err, store.ErrExists) {
		t.Errorf("creating the same asset id twice: %v; want ErrExists", err)
	}
	if got, _ := s.Asset(ctx, id); got.WorkspaceID != "ws_a" {
		t.Errorf("a second create changed the owner to %s", got.WorkspaceID)
	}
	if _, err := s.Asset(ctx, asset.NewID()); !errors.Is(err, asset.ErrNotFound) {
		t.Errorf("unknown asset: %v; want asset.ErrNotFound", err)
	}
}
