// Package assetsdb keeps the records of uploaded images in the service's
// table: ASSET#<id> / ASSET, and nothing else (their bytes are in the
// assets bucket, under the record's key).
package assetsdb

import (
	"context"
	"errors"
	"fmt"

	"genjobs/internal/asset"
	"genjobs/internal/job"
	"genjobs/internal/store"
)

// DB is the store with the assets' records besides.
type DB struct{ *store.Store }

// New returns the assets' records on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// assetItem is an asset's record; its bytes are in the assets bucket under Key.
type assetItem struct {
	PK, SK      string
	AssetID     string `dynamodbav:"asset_id"`
	WorkspaceID string `dynamodbav:"workspace_id"`
	Key         string `dynamodbav:"key"`
	ContentType string `dynamodbav:"content_type"`
	Size        int64  `dynamodbav:"size"`
	CreatedAt   string `dynamodbav:"created_at"`
}

func assetPK(id string) string { return "ASSET#" + id }

// CreateAsset stores a new asset's record. Its id must be new.
func (s *DB) CreateAsset(ctx context.Context, a asset.Asset) error {
	err := s.PutNew(ctx, assetItem{
		PK: assetPK(a.ID), SK: "ASSET", AssetID: a.ID, WorkspaceID: a.WorkspaceID,
		Key: a.Key, ContentType: a.ContentType, Size: a.Size, CreatedAt: job.TimeOf(a.CreatedAt).String(),
	})
	if err != nil {
		return fmt.Errorf("create asset %s: %w", a.ID, err)
	}
	return nil
}

// Asset reads an asset's record by id, whatever its workspace: the caller
// checks ownership. A missing one is asset.ErrNotFound.
func (s *DB) Asset(ctx context.Context, id string) (asset.Asset, error) {
	var it assetItem
	if err := s.Get(ctx, assetPK(id), "ASSET", &it); errors.Is(err, store.ErrNotFound) {
		return asset.Asset{}, asset.ErrNotFound
	} else if err != nil {
		return asset.Asset{}, err
	}
	created, err := job.ParseTime(it.CreatedAt)
	if err != nil {
		return asset.Asset{}, fmt.Errorf("asset %s: bad time %q", id, it.CreatedAt)
	}
	return asset.Asset{
		ID: it.AssetID, WorkspaceID: it.WorkspaceID, Key: it.Key,
		ContentType: it.ContentType, Size: it.Size, CreatedAt: created.Time,
	}, nil
}
