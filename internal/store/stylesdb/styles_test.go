package stylesdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"genjobs/internal/fault"
	"genjobs/internal/store"
	"genjobs/internal/store/storetest"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
	"genjobs/internal/testenv"
)

// Users of the style tests: the API's user of two workspaces, an
// application user in each, and the service.
var (
	apiA = style.APICaller("ws_a")
	apiB = style.APICaller("ws_b")
	ann  = style.Caller{WorkspaceID: "ws_a", UserID: "0f8c7a52-1d7e-4f7e-9a55-6a1d2b3c4d01"}
	bob  = style.Caller{WorkspaceID: "ws_b", UserID: "0f8c7a52-1d7e-4f7e-9a55-6a1d2b3c4d02"}
)

func ownerOf(c style.Caller) style.Owner {
	if c.UserID == style.APIUserID(c.WorkspaceID) {
		return style.APIOwner(c.WorkspaceID)
	}
	return style.Owner{Kind: style.OwnerApp, ID: c.UserID, Name: "User " + c.UserID[:4]}
}

// styleSpec is one style of a fixture; owner nil is the service.
type styleSpec struct {
	name                                      string
	owner                                     *style.Caller
	public, approved, editor, gallery, modelC bool
	sharedWith                                []string
}

// fixture stores styles one second apart from t0, in order, and returns
// their ids by name.
type fixture struct {
	t   *testing.T
	s   *stylesdb.DB
	at  time.Time
	ids map[string]string
}

func newStyleFixture(t *testing.T) *fixture {
	s := stylesdb.New(storetest.New(t))
	addWorkspace(t, s.Store, "ws_a")
	addWorkspace(t, s.Store, "ws_b")
	return &fixture{t: t, s: s, at: t0, ids: map[string]string{}}
}

func (f *fixture) add(sp styleSpec) style.Style {
	f.t.Helper()
	ctx := context.Background()
	f.at = f.at.Add(time.Second)
	st := style.Style{
		ID: "sty_" + sp.name, Title: sp.name, Prompt: "prompt of " + sp.name, Public: sp.public,
		Models: []string{"model-e-4"}, URLs: []string{"https://img.test/" + sp.name + ".png"}, CreatedAt: f.at,
	}
	if sp.modelC {
		st.Models = []string{"model-c", "model-e-4"}
	}
	if sp.owner == nil {
		st.Owner = style.Owner{Kind: style.OwnerService}
	} else {
		st.Owner, st.WorkspaceID = ownerOf(*sp.owner), sp.owner.WorkspaceID
	}
	if err := f.s.CreateStyle(ctx, st); err != nil {
		f.t.Fatalf("create %s: %v", sp.name, err)
	}
	if sp.approved {
		if _, err := f.s.ApproveStyle(ctx, st.ID); err != nil {
			f.t.Fatal(err)
		}
	}
	if sp.editor || sp.gallery {
		if _, err := f.s.FeatureStyle(ctx, st.ID, sp.editor, sp.gallery); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, ws := range sp.sharedWith {
		if _, err := f.s.ShareStyle(ctx, st.ID, ws); err != nil {
			f.t.Fatal(err)
		}
	}
	f.ids[sp.name] = st.ID
	return st
}

func (f *fixture) like(c style.Caller, name string) {
	f.t.Helper()
	if _, _, err := f.s.LikeStyle(context.Background(), c, "sty_"+name, t0); err != nil {
		f.t.Fatalf("like %s: %v", name, err)
	}
}

// list walks every page of c's query and returns the names, in order.
func (f *fixture) list(c style.Caller, q style.Query) []string {
	f.t.Helper()
	if q.Limit == 0 {
		q.Limit = 100
	}
	var names []string
	for pages := 0; ; pages++ {
		page, err := f.s.ListStyles(context.Background(), c, q)
		if err != nil {
			f.t.Fatalf("%+v %+v: %v", c, q, err)
		}
		for _, st := range page.Styles {
			names = append(names, strings.TrimPrefix(st.ID, "sty_"))
		}
		if page.Next == "" || pages > 100 {
			return names
		}
		q.After = page.Next
	}
}

func ptr(c style.Caller) *style.Caller { return &c }

// membershipFixture is the styles of TestStyleFilterMembership, oldest first.
func membershipFixture(t *testing.T) *fixture {
	f := newStyleFixture(t)
	for _, sp := range []styleSpec{
		{name: "a_private", owner: ptr(apiA)},
		{name: "a_pending", owner: ptr(apiA), public: true, modelC: true},
		{name: "a_listed", owner: ptr(apiA), public: true, approved: true},
		{name: "a_shared", owner: ptr(apiA), sharedWith: []string{"ws_a"}},
		{name: "ann_private", owner: ptr(ann), modelC: true},
		{name: "ann_shared", owner: ptr(ann), sharedWith: []string{"ws_a"}},
		{name: "ann_listed", owner: ptr(ann), public: true, approved: true, gallery: true, modelC: true},
		{name: "ann_pending_shared", owner: ptr(ann), public: true, sharedWith: []string{"ws_a"}},
		{name: "b_private", owner: ptr(apiB), modelC: true},
		{name: "b_listed", owner: ptr(apiB), public: true, approved: true, editor: true},
		{name: "b_to_a", owner: ptr(apiB), sharedWith: []string{"ws_a"}, modelC: true},
		{name: "bob_listed", owner: ptr(bob), public: true, approved: true, editor: true},
		{name: "bob_private_gallery", owner: ptr(bob), gallery: true, editor: true},
		{name: "svc_plain", modelC: true},
		{name: "svc_public", public: true, editor: true, gallery: true},
	} {
		f.add(sp)
	}
	f.like(apiA, "a_listed")
	f.like(apiA, "b_listed")
	f.like(apiA, "svc_plain")
	f.like(apiB, "b_listed")
	f.like(ann, "ann_shared")
	f.like(ann, "b_to_a")
	return f
}

// newestFirst writes names in the fixture's listing order (it created them
// in the order of membershipFixture, one second apart).
func newestFirst(names ...string) []string {
	order := []string{"a_private", "a_pending", "a_listed", "a_shared", "ann_private", "ann_shared", "ann_listed",
		"ann_pending_shared", "b_private", "b_listed", "b_to_a", "bob_listed", "bob_private_gallery", "svc_plain", "svc_public"}
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int { return slices.Index(order, b) - slices.Index(order, a) })
	return out
}

func TestStyleFilterMembership(t *testing.T) {
	f := membershipFixture(t)
	stylesdb.SetPageSize(f.s, 2) // several Query pages per source
	for _, tc := range []struct {
		who  string
		c    style.Caller
		q    style.Query
		want []string
	}{
		// The API's user of ws_a: its own, shared with ws_a, the service's, the public listing.
		{"A", apiA, style.Query{Filter: style.All}, []string{"a_private", "a_pending", "a_listed", "a_shared", "ann_shared", "ann_listed",
			"ann_pending_shared", "b_listed", "b_to_a", "bob_listed", "svc_plain", "svc_public"}},
		{"A", apiA, style.Query{Filter: style.User}, []string{"a_private", "a_pending", "a_listed", "a_shared"}},
		{"A", apiA, style.Query{Filter: style.Community}, []string{"ann_listed", "b_listed", "bob_listed"}},
		{"A", apiA, style.Query{Filter: style.Service}, []string{"svc_plain", "svc_public"}},
		{"A", apiA, style.Query{Filter: style.Shared}, []string{"a_shared", "ann_shared", "ann_pending_shared", "b_to_a"}},
		{"A", apiA, style.Query{Filter: style.Unapproved}, []string{"a_private", "a_pending", "a_shared"}},
		{"A", apiA, style.Query{Filter: style.Editor}, []string{"b_listed", "bob_listed", "svc_public"}},
		{"A", apiA, style.Query{Filter: style.Gallery}, []string{"ann_listed", "svc_public"}},
		{"A", apiA, style.Query{Filter: style.Public}, []string{"a_pending", "a_listed", "ann_listed", "ann_pending_shared", "b_listed", "bob_listed", "svc_public"}},
		{"A", apiA, style.Query{Filter: style.All, Liked: true}, []string{"a_listed", "b_listed", "svc_plain"}},
		{"A", apiA, style.Query{Filter: style.Service, Liked: true}, []string{"svc_plain"}},
		{"A", apiA, style.Query{Filter: style.All, Model: "model-c"}, []string{"a_pending", "ann_listed", "b_to_a", "svc_plain"}},
		{"A", apiA, style.Query{Filter: style.All, User: ann.UserID}, []string{"ann_shared", "ann_listed", "ann_pending_shared"}},
		{"A", apiA, style.Query{Filter: style.All, User: apiB.UserID}, []string{"b_listed", "b_to_a"}},
		{"A", apiA, style.Query{Filter: style.Shared, User: apiB.UserID}, []string{"b_to_a"}},
		{"A", apiA, style.Query{Filter: style.All, IDs: []string{"sty_a_private", "sty_ann_private", "sty_b_to_a", "sty_nope", "sty_svc_plain"}},
			[]string{"a_private", "b_to_a", "svc_plain"}},
		{"A", apiA, style.Query{Filter: style.All, Liked: true, IDs: []string{"sty_a_private", "sty_svc_plain", "sty_b_listed"}},
			[]string{"svc_plain", "b_listed"}},
		// The API's user of ws_b sees nothing of ws_a's but its public listing.
		{"B", apiB, style.Query{Filter: style.All}, []string{"a_listed", "ann_listed", "b_private", "b_listed", "b_to_a", "bob_listed", "svc_plain", "svc_public"}},
		{"B", apiB, style.Query{Filter: style.User}, []string{"b_private", "b_listed", "b_to_a"}},
		{"B", apiB, style.Query{Filter: style.Community}, []string{"a_listed", "ann_listed", "bob_listed"}},
		{"B", apiB, style.Query{Filter: style.Service}, []string{"svc_plain", "svc_public"}},
		{"B", apiB, style.Query{Filter: style.Shared}, nil},
		{"B", apiB, style.Query{Filter: style.Unapproved}, []string{"b_private", "b_to_a"}},
		{"B", apiB, style.Query{Filter: style.Editor}, []string{"b_listed", "bob_listed", "svc_public"}},
		{"B", apiB, style.Query{Filter: style.Gallery}, []string{"ann_listed", "svc_public"}},
		{"B", apiB, style.Query{Filter: style.Public}, []string{"a_listed", "ann_listed", "b_listed", "bob_listed", "svc_public"}},
		{"B", apiB, style.Query{Filter: style.All, Liked: true}, []string{"b_listed"}},
		{"B", apiB, style.Query{Filter: style.All, IDs: []string{"sty_a_private", "sty_a_listed"}}, []string{"a_listed"}},
		// An application user of ws_a does not see the API's styles unless shared (docs/api.md, "Styles").
		{"Ann", ann, style.Query{Filter: style.All}, []string{"a_listed", "a_shared", "ann_private", "ann_shared", "ann_listed",
			"ann_pending_shared", "b_listed", "b_to_a", "bob_listed", "svc_plain", "svc_public"}},
		{"Ann", ann, style.Query{Filter: style.User}, []string{"ann_private", "ann_shared", "ann_listed", "ann_pending_shared"}},
		{"Ann", ann, style.Query{Filter: style.Community}, []string{"a_listed", "b_listed", "bob_listed"}},
		{"Ann", ann, style.Query{Filter: style.Unapproved}, []string{"ann_private", "ann_shared", "ann_pending_shared"}},
		{"Ann", ann, style.Query{Filter: style.Shared}, []string{"a_shared", "ann_shared", "ann_pending_shared", "b_to_a"}},
		{"Ann", ann, style.Query{Filter: style.Public}, []string{"a_listed", "ann_listed", "ann_pending_shared", "b_listed", "bob_listed", "svc_public"}},
		{"Ann", ann, style.Query{Filter: style.All, Liked: true}, []string{"ann_shared", "b_to_a"}},
	} {
		got := f.list(tc.c, tc.q)
		if want := newestFirst(tc.want...); !slices.Equal(got, want) {
			t.Errorf("%s %+v:\n got  %v\n want %v", tc.who, tc.q, got, want)
		}
	}
}

// Every filter, every narrowing and every caller agree with the rules of
// package style applied to every style (the store's sets and merge against
// a plain reading of the rules).
func TestStyleListsAgreeWithTheRules(t *testing.T) {
	f := membershipFixture(t)
	var all []style.Style
	for _, id := range f.ids {
		st, err := f.s.Style(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, st)
	}
	for _, c := range []style.Caller{apiA, apiB, ann, bob} {
		for _, fl := range style.Filters {
			for _, model := range []string{"", "model-c"} {
				q := style.Query{Filter: fl, Model: model, Limit: 3}
				var want []string
				for _, st := range all {
					if c.Matches(&st, q) {
						want = append(want, strings.TrimPrefix(st.ID, "sty_"))
					}
				}
				if got := f.list(c, q); !slices.Equal(got, newestFirst(want...)) {
					t.Errorf("%+v %+v: got %v; the rules give %v", c, q, got, newestFirst(want...))
				}
			}
		}
	}
}

// A walk of the pages of a query shows each style that existed when it
// began exactly once, newest first, while styles are added to every set
// the query reads.
func TestStyleCursorWalks(t *testing.T) {
	const limit = 4
	for _, n := range []int{0, 1, limit, 3 * limit} {
		for _, fl := range []style.Filter{style.All, style.User} {
			t.Run(fmt.Sprintf("%d styles, filter %s", n, fl), func(t *testing.T) {
				f := newStyleFixture(t)
				stylesdb.SetPageSize(f.s, 3)
				// Spread over the sets filter=all merges: own, shared, service, listed.
				kinds := []styleSpec{
					{owner: ptr(apiA)},
					{owner: ptr(ann), sharedWith: []string{"ws_a"}},
					{},
					{owner: ptr(apiB), public: true, approved: true},
				}
				if fl == style.User {
					kinds = kinds[:1]
				}
				var want []string
				for i := range n {
					sp := kinds[i%len(kinds)]
					sp.name = fmt.Sprintf("old%02d", i)
					f.add(sp)
					want = append([]string{sp.name}, want...)
				}
				var got []string
				q := style.Query{Filter: fl, Limit: limit}
				pages := 0
				for page := 0; ; page++ {
					pages++
					p, err := f.s.ListStyles(context.Background(), apiA, q)
					if err != nil {
						t.Fatal(err)
					}
					if len(p.Styles) > limit {
						t.Fatalf("page %d has %d styles; limit %d", page, len(p.Styles), limit)
					}
					for _, st := range p.Styles {
						got = append(got, strings.TrimPrefix(st.ID, "sty_"))
					}
					// New styles in every set, between the pages.
					for i, sp := range kinds {
						sp.name = fmt.Sprintf("new%d_%d", page, i)
						f.add(sp)
					}
					if p.Next == "" {
						break
					}
					if len(p.Styles) != limit {
						t.Errorf("page %d has %d styles and a cursor; want full pages until the last", page, len(p.Styles))
					}
					if page > n {
						t.Fatal("the walk does not end")
					}
					q.After = p.Next
				}
				if !slices.Equal(got, want) {
					t.Errorf("walked %v\nwant   %v", got, want)
				}
				if wantPages := max(1, (n+limit-1)/limit); pages != wantPages {
					t.Errorf("%d pages; want %d", pages, wantPages)
				}
				// A fresh walk starts with the newest styles, those added meanwhile.
				p, err := f.s.ListStyles(context.Background(), apiA, style.Query{Filter: fl, Limit: 1})
				if err != nil || len(p.Styles) != 1 || !strings.HasPrefix(p.Styles[0].ID, "sty_new") {
					t.Errorf("a new walk begins with %+v, %v; want the newest style", p.Styles, err)
				}
			})
		}
	}
}

// A query whose sets hold many styles the caller may not see reads a
// bounded number of them per request: short pages with a cursor, that
// still reach every style.
func TestStyleRejectBudget(t *testing.T) {
	f := newStyleFixture(t)
	stylesdb.SetListScan(f.s, 3)
	f.add(styleSpec{name: "visible_old", owner: ptr(apiB), public: true, approved: true, editor: true})
	for i := range 7 {
		f.add(styleSpec{name: fmt.Sprintf("hidden%d", i), owner: ptr(bob), editor: true})
	}
	f.add(styleSpec{name: "visible_new", editor: true})
	var got []string
	q := style.Query{Filter: style.Editor, Limit: 10}
	requests := 0
	for {
		requests++
		p, err := f.s.ListStyles(context.Background(), apiA, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range p.Styles {
			got = append(got, strings.TrimPrefix(st.ID, "sty_"))
		}
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	if !slices.Equal(got, []string{"visible_new", "visible_old"}) || requests < 3 {
		t.Errorf("got %v in %d requests; want both visible picks, over at least 3 requests of 3 rejects", got, requests)
	}
}

func TestStyleLikesCountOnce(t *testing.T) {
	f := newStyleFixture(t)
	f.add(styleSpec{name: "listed", owner: ptr(apiB), public: true, approved: true})
	f.add(styleSpec{name: "hidden", owner: ptr(apiB)})
	ctx := context.Background()
	for i, want := range []bool{true, false} {
		st, liked, err := f.s.LikeStyle(ctx, apiA, "sty_listed", t0)
		if err != nil || liked != want || st.LikeCount != 1 {
			t.Errorf("like %d: count %d liked %v (%v); want count 1, liked %v", i, st.LikeCount, liked, err, want)
		}
	}
	if st, _, err := f.s.LikeStyle(ctx, apiB, "sty_listed", t0); err != nil || st.LikeCount != 2 {
		t.Errorf("second user's like: %d, %v; want 2", st.LikeCount, err)
	}
	if _, _, err := f.s.LikeStyle(ctx, apiA, "sty_hidden", t0); !errors.Is(err, style.ErrNotFound) {
		t.Errorf("liking a style the user may not see: %v; want ErrNotFound", err)
	}
	if _, _, err := f.s.LikeStyle(ctx, apiA, "sty_missing", t0); !errors.Is(err, style.ErrNotFound) {
		t.Errorf("liking a missing style: %v; want ErrNotFound", err)
	}
}

func TestStyleChangesAtOnceAllLand(t *testing.T) {
	f := newStyleFixture(t)
	f.add(styleSpec{name: "s", owner: ptr(apiA), public: true})
	ctx := context.Background()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 4)
	for _, change := range []func() error{
		func() error { _, err := f.s.ApproveStyle(ctx, "sty_s"); return err },
		func() error { _, err := f.s.ShareStyle(ctx, "sty_s", "ws_b"); return err },
		func() error { _, err := f.s.FeatureStyle(ctx, "sty_s", true, false); return err },
		func() error { _, err := f.s.FeatureStyle(ctx, "sty_s", false, true); return err },
	} {
		wg.Go(func() { <-start; errs <- change() })
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := f.s.Style(ctx, "sty_s")
	if err != nil || !st.Approved || !st.EditorsPick || !st.Gallery || !slices.Equal(st.SharedWith, []string{"ws_b"}) {
		t.Fatalf("after four changes at once: %+v, %v", st, err)
	}
	// And the sets followed: B sees it as shared, in the listing, as a pick.
	for _, q := range []style.Query{{Filter: style.Shared}, {Filter: style.Community}, {Filter: style.Editor}, {Filter: style.Gallery}} {
		if got := f.list(apiB, q); !slices.Equal(got, []string{"s"}) {
			t.Errorf("B %s: %v; want [s]", q.Filter, got)
		}
	}
	if got := f.list(apiA, style.Query{Filter: style.Unapproved}); len(got) != 0 {
		t.Errorf("A unapproved after approval: %v; want none", got)
	}
	if _, err := f.s.ShareStyle(ctx, "sty_s", "ws_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("sharing with a missing workspace: %v; want ErrNotFound", err)
	}
	if _, err := f.s.ApproveStyle(ctx, "sty_nope"); !errors.Is(err, style.ErrNotFound) {
		t.Errorf("approving a missing style: %v; want style.ErrNotFound", err)
	}
}

func TestCreateStyleChecksItsWorkspace(t *testing.T) {
	f := newStyleFixture(t)
	st := style.Style{ID: "sty_x", WorkspaceID: "ws_nope", Owner: style.APIOwner("ws_nope"), Title: "x", Models: []string{"model-e-4"}, CreatedAt: t0}
	if err := f.s.CreateStyle(context.Background(), st); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a style of a missing workspace: %v; want ErrNotFound", err)
	}
	f.add(styleSpec{name: "dup", owner: ptr(apiA)})
	st = style.Style{ID: "sty_dup", WorkspaceID: "ws_a", Owner: style.APIOwner("ws_a"), Title: "x", Models: []string{"model-e-4"}, CreatedAt: t0}
	if err := f.s.CreateStyle(context.Background(), st); !errors.Is(err, store.ErrExists) {
		t.Errorf("a second style of the same id: %v; want ErrExists", err)
	}
}

// Two first requests for a style's share link at once: one stores its
// token, both answer that one.
func TestShareLinkFirstRequestsAtOnce(t *testing.T) {
	f := newStyleFixture(t)
	ctx := context.Background()
	for i := range 8 {
		name := fmt.Sprintf("s%d", i)
		f.add(styleSpec{name: name, owner: ptr(apiA)})
		type answer struct {
			token string
			isNew bool
			err   error
		}
		answers := make([]answer, 2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for j := range answers {
			wg.Go(func() {
				<-start
				tok, isNew, err := f.s.ShareLink(ctx, "sty_"+name, apiA.UserID, style.NewShareToken(), t0)
				answers[j] = answer{tok, isNew, err}
			})
		}
		close(start)
		wg.Wait()
		a, b := answers[0], answers[1]
		if a.err != nil || b.err != nil || a.token != b.token || a.isNew == b.isNew {
			t.Fatalf("two first requests: %+v and %+v; want one token, one new", a, b)
		}
		tok, isNew, err := f.s.ShareLink(ctx, "sty_"+name, apiA.UserID, style.NewShareToken(), t0)
		if err != nil || isNew || tok != a.token {
			t.Errorf("a later request: %q new=%v %v; want %q, not new", tok, isNew, err, a.token)
		}
		st, err := f.s.SharedStyle(ctx, tok)
		if err != nil || st.ID != "sty_"+name {
			t.Errorf("the link resolves to %+v, %v; want %s", st.ID, err, name)
		}
	}
	if _, _, err := f.s.ShareLink(ctx, "sty_s0", apiB.UserID, style.NewShareToken(), t0); !errors.Is(err, style.ErrNotFound) {
		t.Errorf("another owner: %v; want ErrNotFound", err)
	}
	f.add(styleSpec{name: "svc"})
	if _, _, err := f.s.ShareLink(ctx, "sty_svc", "", style.NewShareToken(), t0); !errors.Is(err, style.ErrNotFound) {
		t.Errorf("a service style: %v; want ErrNotFound", err)
	}
	if _, err := f.s.SharedStyle(ctx, "nope"); !errors.Is(err, style.ErrNotFound) {
		t.Errorf("an unknown token: %v; want ErrNotFound", err)
	}
}

// unprocessed answers every BatchGetItem as DynamoDB may when it throttles
// one: nothing read, every key back as unprocessed.
type unprocessed struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (u unprocessed) Do(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".BatchGetItem") {
		return u.next.Do(r)
	}
	var in struct{ RequestItems json.RawMessage }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: 200, Request: r,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:   io.NopCloser(strings.NewReader(`{"Responses":{},"UnprocessedKeys":` + string(in.RequestItems) + `}`)),
	}, nil
}

// Keys DynamoDB keeps leaving unprocessed are an outage (a 503), not a bug.
func TestStylesKeptUnprocessedAreAnOutage(t *testing.T) {
	f := newStyleFixture(t)
	f.add(styleSpec{name: "mine", owner: ptr(apiA)})
	db := testenv.DynamoDB(t)
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.HTTPClient = unprocessed{next: o.HTTPClient} })
	_, err := stylesdb.New(store.New(db, f.s.Table())).ListStyles(context.Background(), apiA, style.Query{Filter: style.All, Limit: 10})
	if !errors.Is(err, fault.ErrUnavailable) || fault.Code(err) != "UnprocessedKeys" {
		t.Errorf("%v; want an outage with code UnprocessedKeys", err)
	}
}
