// Package stylesdb keeps the styles in the service's table. It writes these
// items and no other:
//
//	entity      PK               SK                 GSI3 (styles-by-set)
//	style       STYLE#<id>       STYLE              -
//	set entry   STYLE#<id>       SET#<set>          STYLESET#<set> / <created>#<id>
//	like        STYLE#<id>       SET#liked#<user>   STYLESET#liked#<user> / <created>#<id>
//	share link  STYLELINK#<tok>  LINK               -
//
// A style item holds the record and its flags; each set it belongs to
// (style.Style.Sets: its owner's, the service's, the public listing,
// shared with a workspace, editor's picks, ...) is one small entry under the
// style, indexed by set and listing position, so that every filter of
// GET /styles is one Query per set, newest first, never a Scan. The entries
// change in the same transaction as the flags they follow. A like is an
// entry of the liker's set, put once (the like count moves with it).
// Listing is style.List over styleSets: it merges the Queries of a query's
// sets by position, reads the styles by key (BatchGetItem, strongly
// consistent) and keeps those the caller's query matches: the style item,
// not the index, has the last word. A user's style is created on the
// condition that its workspace's item (store.WorkspacePK) exists.
package stylesdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/fault"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/style"
)

// DB is the store with the styles besides.
type DB struct {
	*store.Store
	// pageSize caps the items of one Query call (zero: DynamoDB's 1 MB
	// pages), listScan the rejects of one listing (zero: style.MaxRejects);
	// tests lower them.
	pageSize int32
	listScan int
}

// New returns the styles on st's table. It does no I/O.
func New(st *store.Store) *DB {
	return &DB{Store: st}
}

// styleItem is a style as stored.
type styleItem struct {
	PK, SK         string
	StyleID        string   `dynamodbav:"style_id"`
	WorkspaceID    string   `dynamodbav:"workspace_id,omitempty"`
	OwnerKind      string   `dynamodbav:"owner_kind"`
	OwnerID        string   `dynamodbav:"owner_id,omitempty"`
	OwnerName      string   `dynamodbav:"owner_name,omitempty"`
	Title          string   `dynamodbav:"title"`
	Prompt         string   `dynamodbav:"prompt"`
	URLs           []string `dynamodbav:"urls,omitempty"`
	Models         []string `dynamodbav:"models"`
	Public         bool     `dynamodbav:"public"`
	Approved       bool     `dynamodbav:"approved"`
	EditorsPick    bool     `dynamodbav:"editors_pick"`
	Gallery        bool     `dynamodbav:"gallery"`
	SharedWith     []string `dynamodbav:"shared_with,omitempty"`
	LikeCount      int      `dynamodbav:"like_count"`
	CreatedAt      string   `dynamodbav:"created_at"`
	Version        int      `dynamodbav:"version"` // of the flags and sets; likes leave it
	ShareToken     string   `dynamodbav:"share_token,omitempty"`
	ShareCreatedAt string   `dynamodbav:"share_created_at,omitempty"`
}

// setItem is a style's entry in one set.
type setItem struct {
	PK, SK         string
	GSI3PK, GSI3SK string
	StyleID        string   `dynamodbav:"style_id"`
	OwnerID        string   `dynamodbav:"owner_id,omitempty"`
	Models         []string `dynamodbav:"models"`
	At             string   `dynamodbav:"at,omitempty"` // likes: when
}

// linkItem resolves a share link's token to its style.
type linkItem struct {
	PK, SK    string
	StyleID   string `dynamodbav:"style_id"`
	CreatedAt string `dynamodbav:"created_at"`
}

func stylePK(id string) string      { return "STYLE#" + id }
func styleSetPK(set string) string  { return "STYLESET#" + set }
func styleLinkPK(tok string) string { return "STYLELINK#" + tok }

const styleSK = "STYLE"

func toStyleItem(s *style.Style) styleItem {
	return styleItem{
		PK: stylePK(s.ID), SK: styleSK, StyleID: s.ID, WorkspaceID: s.WorkspaceID,
		OwnerKind: string(s.Owner.Kind), OwnerID: s.Owner.ID, OwnerName: s.Owner.Name,
		Title: s.Title, Prompt: s.Prompt, URLs: s.URLs, Models: s.Models,
		Public: s.Public, Approved: s.Approved, EditorsPick: s.EditorsPick, Gallery: s.Gallery,
		SharedWith: s.SharedWith, LikeCount: s.LikeCount, CreatedAt: store.Stamp(s.CreatedAt),
	}
}

func (it *styleItem) toStyle() (style.Style, error) {
	created, err := job.ParseTime(it.CreatedAt)
	if err != nil {
		return style.Style{}, fmt.Errorf("style %s: bad time %q", it.StyleID, it.CreatedAt)
	}
	return style.Style{
		ID: it.StyleID, WorkspaceID: it.WorkspaceID,
		Owner: style.Owner{Kind: style.OwnerKind(it.OwnerKind), ID: it.OwnerID, Name: it.OwnerName},
		Title: it.Title, Prompt: it.Prompt, URLs: it.URLs, Models: it.Models,
		Public: it.Public, Approved: it.Approved, EditorsPick: it.EditorsPick, Gallery: it.Gallery,
		SharedWith: it.SharedWith, LikeCount: it.LikeCount, CreatedAt: created.Time,
	}, nil
}

func toSetItem(s *style.Style, set string) setItem {
	return setItem{
		PK: stylePK(s.ID), SK: "SET#" + set, GSI3PK: styleSetPK(set), GSI3SK: s.Position(),
		StyleID: s.ID, OwnerID: s.Owner.ID, Models: s.Models,
	}
}

func (s *DB) putItem(v any, condition string) (types.TransactWriteItem, error) {
	av, err := attributevalue.MarshalMap(v)
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("encode item: %w", err)
	}
	p := &types.Put{TableName: aws.String(s.Table()), Item: av}
	if condition != "" {
		p.ConditionExpression = aws.String(condition)
	}
	return types.TransactWriteItem{Put: p}, nil
}

// CreateStyle stores a new style with its set entries, in one transaction.
// A user's style needs its workspace to exist (store.ErrNotFound); its id must be
// new (store.ErrExists).
func (s *DB) CreateStyle(ctx context.Context, st style.Style) error {
	if err := st.Validate(); err != nil {
		return fmt.Errorf("create style: %w", err)
	}
	var items []types.TransactWriteItem
	if st.WorkspaceID != "" {
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(s.Table()), Key: store.Key(store.WorkspacePK(st.WorkspaceID), "WS"),
			ConditionExpression: aws.String("attribute_exists(PK)"),
		}})
	}
	it, err := s.putItem(toStyleItem(&st), "attribute_not_exists(PK)")
	if err != nil {
		return err
	}
	items = append(items, it)
	for _, set := range st.Sets() {
		it, err := s.putItem(toSetItem(&st, set), "")
		if err != nil {
			return err
		}
		items = append(items, it)
	}
	_, err = s.Client().TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	i := 0
	if st.WorkspaceID != "" {
		if store.CancelReason(err, 0) == "ConditionalCheckFailed" {
			return fmt.Errorf("create style: workspace %s: %w", st.WorkspaceID, store.ErrNotFound)
		}
		i = 1
	}
	if store.CancelReason(err, i) == "ConditionalCheckFailed" {
		return fmt.Errorf("create style %s: %w", st.ID, store.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create style %s: %w", st.ID, err)
	}
	return nil
}

// readStyle reads a style item strongly consistently; a missing one is
// style.ErrNotFound.
func (s *DB) readStyle(ctx context.Context, id string) (styleItem, error) {
	var it styleItem
	if err := s.Get(ctx, stylePK(id), styleSK, &it); errors.Is(err, store.ErrNotFound) {
		return it, style.ErrNotFound
	} else if err != nil {
		return it, err
	}
	return it, nil
}

// Style reads a style by id, whatever its owner: the caller checks who may
// see it. A missing one is style.ErrNotFound.
func (s *DB) Style(ctx context.Context, id string) (style.Style, error) {
	it, err := s.readStyle(ctx, id)
	if err != nil {
		return style.Style{}, err
	}
	return it.toStyle()
}

// maxStyleRetries bounds the retries of a flag change that met a
// concurrent one.
const maxStyleRetries = 8

// changeStyle applies change to a style's flags and rewrites the sets that
// differ, in one transaction conditioned on the version it read: two
// changes at once both land, one after the other.
func (s *DB) changeStyle(ctx context.Context, id string, change func(*style.Style)) (style.Style, error) {
	for range maxStyleRetries {
		it, err := s.readStyle(ctx, id)
		if err != nil {
			return style.Style{}, err
		}
		old, err := it.toStyle()
		if err != nil {
			return style.Style{}, err
		}
		st := old
		st.SharedWith = slices.Clone(old.SharedWith)
		change(&st)
		before, after := old.Sets(), st.Sets()
		if slices.Equal(before, after) && st.Approved == old.Approved && st.EditorsPick == old.EditorsPick &&
			st.Gallery == old.Gallery && slices.Equal(st.SharedWith, old.SharedWith) {
			return st, nil // nothing to change: the call is idempotent
		}
		shared, err := attributevalue.Marshal(st.SharedWith)
		if err != nil {
			return style.Style{}, err
		}
		if len(st.SharedWith) == 0 {
			shared = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
		}
		items := []types.TransactWriteItem{{Update: &types.Update{
			TableName: aws.String(s.Table()), Key: store.Key(stylePK(id), styleSK),
			UpdateExpression:    aws.String("SET approved = :a, editors_pick = :e, gallery = :g, shared_with = :sw, version = :next"),
			ConditionExpression: aws.String("version = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":a": &types.AttributeValueMemberBOOL{Value: st.Approved}, ":e": &types.AttributeValueMemberBOOL{Value: st.EditorsPick},
				":g": &types.AttributeValueMemberBOOL{Value: st.Gallery}, ":sw": shared,
				":v": styleNum(it.Version), ":next": styleNum(it.Version + 1),
			},
		}}}
		for _, set := range after {
			if !slices.Contains(before, set) {
				put, err := s.putItem(toSetItem(&st, set), "")
				if err != nil {
					return style.Style{}, err
				}
				items = append(items, put)
			}
		}
		for _, set := range before {
			if !slices.Contains(after, set) {
				items = append(items, types.TransactWriteItem{Delete: &types.Delete{
					TableName: aws.String(s.Table()), Key: store.Key(stylePK(id), "SET#"+set),
				}})
			}
		}
		_, err = s.Client().TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if store.CancelReason(err, 0) == "ConditionalCheckFailed" {
			continue // another change came first: apply ours to its result
		}
		if err != nil {
			return style.Style{}, fmt.Errorf("change style %s: %w", id, err)
		}
		return st, nil
	}
	return style.Style{}, fmt.Errorf("change style %s: still contended after %d attempts", id, maxStyleRetries)
}

func styleNum(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(n)} }

// ApproveStyle approves a style for the public listing (a public one then
// shows to everyone).
func (s *DB) ApproveStyle(ctx context.Context, id string) (style.Style, error) {
	return s.changeStyle(ctx, id, func(st *style.Style) { st.Approved = true })
}

// FeatureStyle makes a style an editor's pick, or puts it in the gallery,
// or both.
func (s *DB) FeatureStyle(ctx context.Context, id string, editor, gallery bool) (style.Style, error) {
	return s.changeStyle(ctx, id, func(st *style.Style) {
		st.EditorsPick = st.EditorsPick || editor
		st.Gallery = st.Gallery || gallery
	})
}

// ShareStyle shares a style with workspace ws, which must exist
// (store.ErrNotFound).
func (s *DB) ShareStyle(ctx context.Context, id, ws string) (style.Style, error) {
	var w store.WorkspaceItem
	if err := s.Get(ctx, store.WorkspacePK(ws), "WS", &w); err != nil {
		return style.Style{}, fmt.Errorf("share style: workspace %s: %w", ws, store.ErrNotFound)
	}
	return s.changeStyle(ctx, id, func(st *style.Style) { st.Share(ws) })
}

// LikeStyle records that c's user likes a style c may see, once: a second
// like changes nothing (liked false). A style c may not see is
// style.ErrNotFound.
func (s *DB) LikeStyle(ctx context.Context, c style.Caller, id string, at time.Time) (st style.Style, liked bool, err error) {
	it, err := s.readStyle(ctx, id)
	if err != nil {
		return style.Style{}, false, err
	}
	if st, err = it.toStyle(); err != nil {
		return style.Style{}, false, err
	}
	if !c.Visible(&st) {
		return style.Style{}, false, style.ErrNotFound
	}
	entry := toSetItem(&st, style.LikedSet(c.UserID))
	entry.At = store.Stamp(at)
	put, err := s.putItem(entry, "attribute_not_exists(PK)")
	if err != nil {
		return style.Style{}, false, err
	}
	_, err = s.Client().TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(s.Table()), Key: store.Key(stylePK(id), styleSK),
			UpdateExpression:          aws.String("ADD like_count :one"),
			ConditionExpression:       aws.String("attribute_exists(PK)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": styleNum(1)},
		}},
		put,
	}})
	switch {
	case store.CancelReason(err, 0) == "ConditionalCheckFailed":
		return style.Style{}, false, style.ErrNotFound
	case store.CancelReason(err, 1) == "ConditionalCheckFailed":
		liked = false
	case err != nil:
		return style.Style{}, false, fmt.Errorf("like style %s: %w", id, err)
	default:
		liked = true
	}
	st, err = s.Style(ctx, id)
	return st, liked, err
}

// ShareLink returns the share token of a style owned by owner: the stored
// one (isNew false), or else token, stored now (isNew true). Of two first
// requests at once, one stores its token and the other answers it. A
// missing style, or one of another owner, is style.ErrNotFound.
func (s *DB) ShareLink(ctx context.Context, id, owner, token string, at time.Time) (string, bool, error) {
	for range 2 {
		it, err := s.readStyle(ctx, id)
		if err != nil {
			return "", false, err
		}
		if it.OwnerKind == string(style.OwnerService) || it.OwnerID != owner {
			return "", false, style.ErrNotFound
		}
		if it.ShareToken != "" {
			return it.ShareToken, false, nil
		}
		link, err := s.putItem(linkItem{PK: styleLinkPK(token), SK: "LINK", StyleID: id, CreatedAt: store.Stamp(at)}, "attribute_not_exists(PK)")
		if err != nil {
			return "", false, err
		}
		_, err = s.Client().TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{
				TableName: aws.String(s.Table()), Key: store.Key(stylePK(id), styleSK),
				UpdateExpression:    aws.String("SET share_token = :t, share_created_at = :at"),
				ConditionExpression: aws.String("attribute_exists(PK) AND owner_id = :owner AND attribute_not_exists(share_token)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":t": store.String(token), ":at": store.String(store.Stamp(at)), ":owner": store.String(owner),
				},
			}},
			link,
		}})
		if store.CancelReason(err, 0) == "ConditionalCheckFailed" {
			continue // another request stored its token first: answer that one
		}
		if err != nil {
			return "", false, fmt.Errorf("share style %s: %w", id, err)
		}
		return token, true, nil
	}
	return "", false, fmt.Errorf("share style %s: no token after a lost race", id)
}

// SharedStyle resolves a share link's token to its style: what the
// application's page of the link reads. An unknown token is
// style.ErrNotFound.
func (s *DB) SharedStyle(ctx context.Context, token string) (style.Style, error) {
	var it linkItem
	if err := s.Get(ctx, styleLinkPK(token), "LINK", &it); errors.Is(err, store.ErrNotFound) {
		return style.Style{}, style.ErrNotFound
	} else if err != nil {
		return style.Style{}, err
	}
	return s.Style(ctx, it.StyleID)
}

func (s *DB) maxStyleRejects() int {
	if s.listScan > 0 {
		return s.listScan
	}
	return style.MaxRejects
}

// ListStyles returns a page of the styles c's query q shows (style.List),
// newest first.
func (s *DB) ListStyles(ctx context.Context, c style.Caller, q style.Query) (style.Page, error) {
	if q.IDs != nil {
		if err := q.CheckLimit(); err != nil {
			return style.Page{}, err
		}
		return s.listStylesByID(ctx, c, q)
	}
	return style.List(ctx, styleSets{s}, c, q, s.maxStyleRejects())
}

// listStylesByID answers a query with ids: the styles are read by key, and
// the caller's likes with them when q.Liked.
func (s *DB) listStylesByID(ctx context.Context, c style.Caller, q style.Query) (style.Page, error) {
	keys := make([]map[string]types.AttributeValue, 0, 2*len(q.IDs))
	for _, id := range q.IDs {
		keys = append(keys, store.Key(stylePK(id), styleSK))
		if q.Liked {
			keys = append(keys, store.Key(stylePK(id), "SET#"+style.LikedSet(c.UserID)))
		}
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return style.Page{}, err
	}
	styles, liked := map[string]style.Style{}, map[string]bool{}
	for _, item := range items {
		var head struct {
			SK      string
			StyleID string `dynamodbav:"style_id"`
		}
		if err := attributevalue.UnmarshalMap(item, &head); err != nil {
			return style.Page{}, fmt.Errorf("decode style: %w", err)
		}
		if head.SK != styleSK {
			liked[head.StyleID] = true
			continue
		}
		var it styleItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return style.Page{}, fmt.Errorf("decode style: %w", err)
		}
		st, err := it.toStyle()
		if err != nil {
			return style.Page{}, err
		}
		styles[st.ID] = st
	}
	var matched []style.Style
	for _, st := range styles {
		if c.Matches(&st, q) && (!q.Liked || liked[st.ID]) && (q.After == "" || st.Position() < q.After) {
			matched = append(matched, st)
		}
	}
	slices.SortFunc(matched, func(a, b style.Style) int { return strings.Compare(b.Position(), a.Position()) })
	page := style.Page{Styles: matched}
	if len(matched) > q.Limit {
		page.Styles = matched[:q.Limit]
		page.Next = matched[q.Limit-1].Position()
	}
	return page, nil
}

// styleSets is the store as style.List reads it.
type styleSets struct{ s *DB }

// StylesByID reads styles by key.
func (ss styleSets) StylesByID(ctx context.Context, ids []string) (map[string]style.Style, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = store.Key(stylePK(id), styleSK)
	}
	items, err := ss.s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[string]style.Style, len(items))
	for _, item := range items {
		var it styleItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return nil, fmt.Errorf("decode style: %w", err)
		}
		st, err := it.toStyle()
		if err != nil {
			return nil, err
		}
		out[st.ID] = st
	}
	return out, nil
}

// batchGetKeys is DynamoDB's limit of keys per BatchGetItem.
const batchGetKeys = 100

// batchGetSplit is the most keys read in one BatchGetItem call when there
// are more: above it, the keys are split into at least two calls.
const batchGetSplit = 50

// batchGet reads items by key, strongly consistently, in BatchGetItem calls
// made in parallel: the fewest calls of at most 100 keys, and at least two
// for more than batchGetSplit keys, of even sizes. A page of styles is 101
// keys (the page and the one that says whether another follows): two calls
// of 51 and 50 rather than 100 and 1, as DynamoDB Local reads a call's
// keys one after another.
func (s *DB) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var (
		mu   sync.Mutex
		out  = make([]map[string]types.AttributeValue, 0, len(keys))
		errs []error
		wg   sync.WaitGroup
	)
	calls := (len(keys) + batchGetKeys - 1) / batchGetKeys
	if len(keys) > batchGetSplit {
		calls = max(calls, 2)
	}
	size := (len(keys) + max(calls, 1) - 1) / max(calls, 1)
	for start := 0; start < len(keys); start += size {
		part := keys[start:min(start+size, len(keys))]
		wg.Go(func() {
			items, err := s.batchGetChunk(ctx, part)
			mu.Lock()
			defer mu.Unlock()
			out = append(out, items...)
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// batchGetChunk is one BatchGetItem and the retries of its UnprocessedKeys,
// with the short backoff DynamoDB asks for.
func (s *DB) batchGetChunk(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	req := map[string]types.KeysAndAttributes{s.Table(): {Keys: keys, ConsistentRead: aws.Bool(true)}}
	for attempt := 0; len(req[s.Table()].Keys) > 0; attempt++ {
		if attempt > 0 {
			if attempt > 8 {
				// DynamoDB leaves keys unprocessed when it is throttling.
				return nil, &fault.Unavailable{Code: "UnprocessedKeys",
					Err: fmt.Errorf("read styles: keys still unprocessed after %d attempts", attempt)}
			}
			select {
			case <-time.After(time.Duration(attempt*attempt) * 10 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		res, err := s.Client().BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, fmt.Errorf("read styles: %w", err)
		}
		out = append(out, res.Responses[s.Table()]...)
		req = res.UnprocessedKeys
	}
	return out, nil
}

// SetEntries reads the next page of a set's entries from the styles-by-set
// index: those older than after (all of them when after is "").
func (ss styleSets) SetEntries(ctx context.Context, set, after string, want int, from any) ([]style.Entry, any, error) {
	s := ss.s
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table()),
		IndexName:                 aws.String(store.IndexStylesBySet),
		KeyConditionExpression:    aws.String("GSI3PK = :set"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":set": store.String(styleSetPK(set))},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(min(max(want, 1), style.MaxLimit+1))),
		// What an entry is (style.Entry), not the item's keys.
		ProjectionExpression: aws.String("GSI3SK, style_id, owner_id, models"),
	}
	if start, ok := from.(map[string]types.AttributeValue); ok {
		in.ExclusiveStartKey = start
	}
	if after != "" {
		in.KeyConditionExpression = aws.String("GSI3PK = :set AND GSI3SK < :after")
		in.ExpressionAttributeValues[":after"] = store.String(after)
	}
	if s.pageSize > 0 && *in.Limit > s.pageSize {
		in.Limit = aws.Int32(s.pageSize)
	}
	out, err := s.Client().Query(ctx, in)
	if err != nil {
		return nil, nil, fmt.Errorf("list styles of %s: %w", set, err)
	}
	entries := make([]style.Entry, 0, len(out.Items))
	for _, item := range out.Items {
		var it setItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return nil, nil, fmt.Errorf("decode style entry: %w", err)
		}
		entries = append(entries, style.Entry{Position: it.GSI3SK, ID: it.StyleID, Owner: it.OwnerID, Models: it.Models})
	}
	if out.LastEvaluatedKey == nil {
		return entries, nil, nil // an untyped nil: the last page
	}
	return entries, out.LastEvaluatedKey, nil
}
