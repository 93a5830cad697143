package style

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Entry is a style's entry in one of its sets: its listing position and
// the fields that never change, enough to narrow a query before the style
// itself is read.
type Entry struct {
	Position, ID, Owner string
	Models              []string
}

// Sets is the storage List reads (store.Store).
type Sets interface {
	// SetEntries reads the next page of set's entries older than after (all
	// of them when after is ""), newest first, about want of them. from is
	// where the previous page ended (nil for the first page); next is nil
	// after the last page.
	SetEntries(ctx context.Context, set, after string, want int, from any) (entries []Entry, next any, err error)
	// StylesByID reads styles by id, strongly consistently; a style that
	// does not exist is absent from the map.
	StylesByID(ctx context.Context, ids []string) (map[string]Style, error)
}

// MaxRejects bounds the entries one list request may pass over without
// showing them (styles the caller may not see, or another model's): a page
// that reaches it comes back short, even empty, with a cursor to go on.
// Queries whose sets are exact never reach it.
const MaxRejects = 2000

// List returns a page of the styles c's query q shows, newest first (by
// position: creation time, then id), at most q.Limit of them, and the
// position to go on after ("" on the last page). It merges the entries of
// the query's sets by position and reads the styles they name: the style,
// not its entry, has the last word (an entry may lag its style). A style
// created while a client walks the pages sorts before the walk's position,
// so the walk neither repeats nor skips a style. maxRejects is MaxRejects
// but in tests.
func List(ctx context.Context, sets Sets, c Caller, q Query, maxRejects int) (Page, error) {
	if err := q.CheckLimit(); err != nil {
		return Page{}, err
	}
	m := &merge{sets: sets}
	for _, set := range c.Sources(q) {
		m.sources = append(m.sources, &source{set: set})
	}
	var (
		page     Page
		matched  []Style
		rejects  int
		examined string // the last position looked at
	)
	for len(matched) <= q.Limit {
		want := q.Limit + 1 - len(matched) // one more than the page: is there a next one?
		// At most as many as the reject budget has left: a query whose
		// sets hold many styles it does not show stops in time.
		want = min(want, maxRejects-rejects)
		var batch []Entry
		for len(batch) < want && rejects < maxRejects {
			e, ok, err := m.next(ctx, q.After, want-len(batch))
			if err != nil {
				return Page{}, err
			}
			if !ok {
				break
			}
			if !c.Narrowed(e.Owner, e.Models, e.ID, q) {
				rejects++
				examined = e.Position
				continue
			}
			batch = append(batch, e)
		}
		if len(batch) == 0 {
			break
		}
		ids := make([]string, len(batch))
		for i, e := range batch {
			ids[i] = e.ID
		}
		styles, err := sets.StylesByID(ctx, ids)
		if err != nil {
			return Page{}, err
		}
		for _, e := range batch {
			examined = e.Position
			st, ok := styles[e.ID]
			if !ok || st.Position() != e.Position || !c.Matches(&st, q) {
				rejects++
				continue
			}
			matched = append(matched, st)
			if len(matched) > q.Limit {
				break
			}
		}
		if rejects >= maxRejects {
			break
		}
	}
	switch {
	case len(matched) > q.Limit:
		page.Styles = matched[:q.Limit]
		page.Next = matched[q.Limit-1].Position()
	case m.exhausted():
		page.Styles = matched
	default: // the reject budget ran out: go on after what was looked at
		page.Styles = matched
		page.Next = examined
	}
	return page, nil
}

// source is one set's entries, read newest first, a page at a time.
type source struct {
	set  string
	buf  []Entry
	from any  // where the next page starts
	done bool // no page left to read
}

// merge walks the union of its sources by position, newest first, each
// style once.
type merge struct {
	sets    Sets
	sources []*source
}

func (m *merge) exhausted() bool {
	for _, src := range m.sources {
		if len(src.buf) > 0 || !src.done {
			return false
		}
	}
	return true
}

// next returns the newest entry not yet returned, reading the next page of
// every source whose buffer is empty (in parallel) first; want is how many
// entries the caller still wants.
func (m *merge) next(ctx context.Context, after string, want int) (Entry, bool, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(m.sources))
	for i, src := range m.sources {
		if len(src.buf) == 0 && !src.done {
			wg.Go(func() {
				var entries []Entry
				entries, src.from, errs[i] = m.sets.SetEntries(ctx, src.set, after, want, src.from)
				src.buf = append(src.buf, entries...)
				src.done = errs[i] == nil && src.from == nil
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Entry{}, false, err
	}
	var best *source
	for _, src := range m.sources {
		if len(src.buf) > 0 && (best == nil || src.buf[0].Position > best.buf[0].Position) {
			best = src
		}
	}
	if best == nil {
		return Entry{}, false, nil
	}
	e := best.buf[0]
	for _, src := range m.sources { // the same style in several sets: once
		if len(src.buf) > 0 && src.buf[0].Position == e.Position {
			src.buf = src.buf[1:]
		}
	}
	return e, true, nil
}

// CheckLimit refuses a page size outside 1..MaxLimit: the HTTP layer answers
// 400 before a query gets here, so this is a programming error.
func (q Query) CheckLimit() error {
	if q.Limit < 1 || q.Limit > MaxLimit {
		return fmt.Errorf("list styles: limit %d is outside 1..%d", q.Limit, MaxLimit)
	}
	return nil
}
