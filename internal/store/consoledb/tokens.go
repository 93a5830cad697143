package consoledb

import (
	"context"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/auth"
	"genjobs/internal/job"
	"genjobs/internal/store"
)

// tokenRow is what the tokens page reads of a token's item under its
// workspace (WS#<ws> / TOKEN#<id>, written by store.CreateToken).
type tokenRow struct {
	TokenID    string `dynamodbav:"token_id"`
	Name       string `dynamodbav:"name"`
	Prefix     string `dynamodbav:"prefix"`
	CreatedAt  string `dynamodbav:"created_at"`
	CreatedBy  string `dynamodbav:"created_by"`
	RevokedAt  string `dynamodbav:"revoked_at"`
	LastUsedAt string `dynamodbav:"last_used_at"`
}

// Tokens lists a workspace's tokens, revoked ones included, newest first,
// with their last use.
func (d *DB) Tokens(ctx context.Context, ws string) ([]auth.Token, error) {
	var out []auth.Token
	opt := func(s string) *time.Time {
		if s == "" {
			return nil
		}
		t, _ := job.ParseTime(s)
		return &t.Time
	}
	err := d.queryPrefix(ctx, store.WorkspacePK(ws), "TOKEN#", func(item map[string]types.AttributeValue) error {
		var r tokenRow
		if err := attributevalue.UnmarshalMap(item, &r); err != nil {
			return err
		}
		created, _ := job.ParseTime(r.CreatedAt)
		out = append(out, auth.Token{ID: r.TokenID, WorkspaceID: ws, Name: r.Name, Prefix: r.Prefix, CreatedAt: created.Time,
			CreatedBy: r.CreatedBy, RevokedAt: opt(r.RevokedAt), LastUsedAt: opt(r.LastUsedAt)})
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, err
}
