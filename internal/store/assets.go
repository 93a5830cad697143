package store

import (
	"context"
	"errors"
	"fmt"

	"genjobs/internal/asset"
	"genjobs/internal/job"
)

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
func (s *Store) CreateAsset(ctx context.Context, a asset.Asset) error {
	err := s.PutNew(ctx, assetItem{
		PK: assetPK(a.ID), SK: "ASSET", AssetID: a.ID, WorkspaceID: a.WorkspaceID,
		Key: a.Key, ContentType: a.ContentType, Size: a.Size, CreatedAt: stamp(a.CreatedAt),
	})
	if err != nil {
		return fmt.Errorf("create asset %s: %w", a.ID, err)
	}
	return nil
}

// Asset reads an asset's record by id, whatever its workspace: the caller
// checks ownership. A missing one is asset.ErrNotFound.
func (s *Store) Asset(ctx context.Context, id string) (asset.Asset, error) {
	var it assetItem
	if err := s.Get(ctx, assetPK(id), "ASSET", &it); errors.Is(err, ErrNotFound) {
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
