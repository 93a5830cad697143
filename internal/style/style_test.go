package style_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/style"
)

func TestAPIUserIDIsAVersion5UUIDOfItsName(t *testing.T) {
	// python3 -c "import uuid;print(uuid.uuid5(uuid.UUID('22f6df8d-7f22-46c8-aaed-423fff181c26'),'api:ws_demo'))"
	if got, want := style.APIUserID("ws_demo"), "363f8af1-8b35-5c99-9070-040424359801"; got != want {
		t.Errorf("APIUserID(ws_demo) = %s; want %s", got, want)
	}
	if style.APIUserID("ws_a") == style.APIUserID("ws_b") || !style.ValidUUID(style.APIUserID("ws_a")) {
		t.Error("API user ids must be distinct UUIDs")
	}
}

func TestModelsAreTheCatalogs(t *testing.T) {
	c, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	var models []string
	for _, e := range c.Endpoints() {
		models = append(models, e.Model)
	}
	if !slices.Equal(models, style.Models) {
		t.Errorf("style.Models = %v; the catalog's models are %v", style.Models, models)
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"sty_0123456789abcdef01234567": true,
		"a":                            true,
		"A-b_9":                        true,
		strings.Repeat("x", 128):       true,
		strings.Repeat("x", 129):       false,
		"":                             false,
		"sty 1":                        false,
		"sty/1":                        false,
		"sty.1":                        false,
		"ştyle":                        false,
	} {
		if style.ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v; want %v", id, !want, want)
		}
	}
	if id := style.NewID(); !style.ValidID(id) || !strings.HasPrefix(id, "sty_") || len(id) != 28 {
		t.Errorf("NewID() = %q", id)
	}
	if a, b := style.NewShareToken(), style.NewShareToken(); a == b || len(a) != 43 {
		t.Errorf("share tokens %q, %q; want two distinct 43-character tokens", a, b)
	}
}

func TestRecordHasExactlyTheSpecsFields(t *testing.T) {
	at := time.Date(2026, 11, 21, 20, 33, 0, 0, time.UTC)
	user := style.Style{ID: "sty_1", WorkspaceID: "ws_a", Owner: style.APIOwner("ws_a"), Title: "T", Prompt: "P",
		URLs: []string{"https://x/1.png", "https://x/2.png"}, Models: []string{"model-e-4"}, LikeCount: 3, CreatedAt: at}
	service := style.Style{ID: "sty_2", Owner: style.Owner{Kind: style.OwnerService}, Title: "S", Models: []string{"model-c"}, CreatedAt: at}
	for _, tc := range []struct {
		s    style.Style
		want string
	}{
		{user, `{"id":"sty_1","title":"T","urls":["https://x/1.png","https://x/2.png"],"public":false,"prompt":"P",` +
			`"owner":{"id":"` + style.APIUserID("ws_a") + `","name":"API","avatar_url":"https://app.test/avatars/` + style.APIUserID("ws_a") + `"},` +
			`"like_count":3,"created_at":"2026-11-21T20:33:00.000Z","cover_url":"https://x/1.png","models":["model-e-4"]}`},
		{service, `{"id":"sty_2","title":"S","urls":[],"public":false,"prompt":"","owner":null,"like_count":0,` +
			`"created_at":"2026-11-21T20:33:00.000Z","cover_url":"","models":["model-c"]}`},
	} {
		b, err := json.Marshal(tc.s.Record("https://app.test"))
		if err != nil || string(b) != tc.want {
			t.Errorf("record %s (%v);\nwant   %s", b, err, tc.want)
		}
	}
}

// every style of a small universe: each owner kind, every flag, shared or not.
func universe() []style.Style {
	owners := []struct {
		ws    string
		owner style.Owner
	}{
		{"ws_a", style.APIOwner("ws_a")},
		{"ws_b", style.APIOwner("ws_b")},
		{"ws_a", style.Owner{Kind: style.OwnerApp, ID: "6b1e1f3c-0000-4000-8000-00000000000a", Name: "Ann"}},
		{"ws_b", style.Owner{Kind: style.OwnerApp, ID: "6b1e1f3c-0000-4000-8000-00000000000b", Name: "Bob"}},
		{"", style.Owner{Kind: style.OwnerService}},
	}
	var out []style.Style
	n := 0
	for _, o := range owners {
		for flags := 0; flags < 1<<4; flags++ {
			for _, shared := range [][]string{nil, {"ws_a"}, {"ws_b"}, {"ws_a", "ws_b"}} {
				n++
				out = append(out, style.Style{
					ID: fmt.Sprintf("sty_%04d", n), WorkspaceID: o.ws, Owner: o.owner,
					Public: flags&1 != 0, Approved: flags&2 != 0, EditorsPick: flags&4 != 0, Gallery: flags&8 != 0,
					SharedWith: shared, Models: [][]string{{"model-e-4"}, {"model-c", "model-e-4"}}[n%2],
				})
			}
		}
	}
	return out
}

// The store's contract: the sources of a query hold every style the query
// matches, and for the exact filters nothing else.
func TestSourcesHoldEveryMatch(t *testing.T) {
	callers := []style.Caller{
		style.APICaller("ws_a"), style.APICaller("ws_b"),
		{WorkspaceID: "ws_a", UserID: "6b1e1f3c-0000-4000-8000-00000000000a"},
	}
	exact := map[style.Filter]bool{style.All: true, style.User: true, style.Service: true, style.Shared: true,
		style.Unapproved: true, style.Public: true}
	for _, c := range callers {
		for _, f := range style.Filters {
			for _, user := range []string{"", c.UserID, style.APIUserID("ws_b")} {
				for _, model := range []string{"", "model-c"} {
					q := style.Query{Filter: f, User: user, Model: model}
					sources := c.Sources(q)
					for _, s := range universe() {
						in := slices.ContainsFunc(s.Sets(), func(set string) bool { return slices.Contains(sources, set) })
						m := c.Matches(&s, q)
						if m && !in {
							t.Errorf("%+v %+v: %s (%+v) matches but is in none of %v (its sets %v)", c, q, s.ID, s, sources, s.Sets())
						}
						if in && !m && exact[f] && user == "" && model == "" {
							t.Errorf("%+v %+v: %s is in %v but does not match", c, q, s.ID, sources)
						}
					}
				}
			}
		}
	}
}

func TestVisibility(t *testing.T) {
	a := style.APICaller("ws_a")
	ann := style.Caller{WorkspaceID: "ws_a", UserID: "6b1e1f3c-0000-4000-8000-00000000000a"}
	annPrivate := style.Style{Owner: style.Owner{Kind: style.OwnerApp, ID: ann.UserID}, WorkspaceID: "ws_a"}
	apiPrivate := style.Style{Owner: style.APIOwner("ws_a"), WorkspaceID: "ws_a"}
	if a.Visible(&annPrivate) || ann.Visible(&apiPrivate) {
		t.Error("styles of the application and of the API must be invisible to each other")
	}
	annPrivate.Share("ws_a")
	apiPrivate.Share("ws_a")
	if !a.Visible(&annPrivate) || !ann.Visible(&apiPrivate) {
		t.Error("shared with the workspace, each must see the other's")
	}
	pending := style.Style{Owner: style.APIOwner("ws_b"), WorkspaceID: "ws_b", Public: true}
	if a.Visible(&pending) {
		t.Error("a public style before approval is seen by its owner alone")
	}
	pending.Approved = true
	if !a.Visible(&pending) {
		t.Error("an approved public style is seen by everyone")
	}
}

func TestCursorIsBoundToWorkspaceAndQuery(t *testing.T) {
	a, b := style.APICaller("ws_a"), style.APICaller("ws_b")
	q := style.Query{Filter: style.All, Limit: 10}
	pos := style.Position(time.Date(2026, 11, 21, 20, 33, 0, 5e6, time.UTC), "sty_1")
	text := a.Cursor(q, pos)
	if got, err := a.ResumeAfter(q, text); err != nil || got != pos {
		t.Fatalf("ResumeAfter = %q, %v; want %q", got, err, pos)
	}
	q2 := q
	q2.Limit = 500
	if _, err := a.ResumeAfter(q2, text); err != nil {
		t.Errorf("another limit: %v; a cursor goes on with any page size", err)
	}
	for name, tc := range map[string]struct {
		c    style.Caller
		q    style.Query
		text string
	}{
		"other workspace": {b, q, text},
		"other filter":    {a, style.Query{Filter: style.User}, text},
		"liked":           {a, style.Query{Filter: style.All, Liked: true}, text},
		"model":           {a, style.Query{Filter: style.All, Model: "model-c"}, text},
		"ids":             {a, style.Query{Filter: style.All, IDs: []string{}}, text},
		"garbage":         {a, q, "not-a-cursor"},
		"truncated":       {a, q, text[:len(text)-3]},
		"empty":           {a, q, ""},
		"too long":        {a, q, strings.Repeat("A", style.MaxCursorLength+1)},
		"bad position":    {a, q, a.Cursor(q, "yesterday#sty_1")},
		"bad id":          {a, q, a.Cursor(q, "2026-11-21T20:33:00.005Z#sty 1")},
	} {
		if _, err := tc.c.ResumeAfter(tc.q, tc.text); err != style.ErrBadCursor {
			t.Errorf("%s: %v; want ErrBadCursor", name, err)
		}
	}
}

func TestSetsFollowTheFlags(t *testing.T) {
	s := style.Style{Owner: style.APIOwner("ws_a"), WorkspaceID: "ws_a", Public: true}
	u := style.APIUserID("ws_a")
	if got, want := s.Sets(), []string{"own#" + u, "unapproved#" + u, "ownpublic#" + u}; !reflect.DeepEqual(got, want) {
		t.Errorf("sets %v; want %v", got, want)
	}
	s.Approved, s.EditorsPick = true, true
	s.Share("ws_b")
	want := []string{"own#" + u, "ownpublic#" + u, "listed", "community", "shared#ws_b", "sharedpublic#ws_b", "editor"}
	if got := s.Sets(); !reflect.DeepEqual(got, want) {
		t.Errorf("sets %v; want %v", got, want)
	}
}
