package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// Page is one page of a list the API answers in pages (JobPage,
// StylePage): its items in the list's order and the cursor of the next.
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"` // nil on the last page

	raw json.RawMessage
}

// RawJSON is the page exactly as the API sent it.
func (p *Page[T]) RawJSON() json.RawMessage { return p.raw }

// getPage reads one page of the list at path: the query q, with at most
// limit items (0: the API's default) from cursor on.
func getPage[T any](ctx context.Context, c *Client, path string, q url.Values, limit int, cursor string) (*Page[T], error) {
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path, query: q})
	if err != nil {
		return nil, err
	}
	var page Page[T]
	if err := decode(resp, &page); err != nil {
		return nil, err
	}
	page.raw = resp.body
	return &page, nil
}

// paginate yields every item of the pages read from cursor on, following
// next cursors; it stops at the first error, which it yields.
func paginate[T any](cursor string, read func(cursor string) (*Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			page, err := read(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextCursor == nil || *page.NextCursor == "" {
				return
			}
			cursor = *page.NextCursor
		}
	}
}
