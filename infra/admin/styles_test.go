package main

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
)

const annID = "7a0c9e3b-2f4d-4e6a-8b1c-0d2e3f4a5b6c"

func (e *env) listStyles(t *testing.T, c style.Caller, f style.Filter) []string {
	t.Helper()
	p, err := stylesdb.New(e.store()).ListStyles(context.Background(), c, style.Query{Filter: f, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range p.Styles {
		ids = append(ids, st.ID)
	}
	slices.Sort(ids)
	return ids
}

func sorted(ids ...string) []string { slices.Sort(ids); return ids }

func TestStyleCommands(t *testing.T) {
	e := newEnv(t)
	wsA := e.ok(t, "workspace", "create", "--name", "A")["workspace_id"].(string)
	wsB := e.ok(t, "workspace", "create", "--name", "B")["workspace_id"].(string)
	apiA, apiB := style.APICaller(wsA), style.APICaller(wsB)

	create := func(args ...string) string {
		t.Helper()
		out := e.ok(t, append([]string{"style", "create"}, args...)...)
		wantKeys(t, out, "style_id")
		id := out["style_id"].(string)
		if !style.ValidID(id) || !strings.HasPrefix(id, "sty_") {
			t.Fatalf("style id %q", id)
		}
		return id
	}
	own := create("--workspace", wsA, "--title", "Ink", "--prompt", "ink lines", "--models", "model-e-4,model-c",
		"--urls", "https://img.test/1.png, https://img.test/2.png")
	app := create("--workspace", wsA, "--app-user", strings.ToUpper(annID), "--owner-name", "Ann", "--title", "Moodboard",
		"--prompt", "grain\nwarm", "--models", "model-e-4")
	pub := create("--workspace", wsB, "--title", "Neon", "--prompt", "neon", "--models", "model-b-fast", "--public")
	svc := create("--service", "--title", "Watercolor", "--prompt", "washes", "--models", "model-e-4", "--public")

	st, err := stylesdb.New(e.store()).Style(context.Background(), own)
	if err != nil {
		t.Fatal(err)
	}
	if st.Owner != style.APIOwner(wsA) || st.WorkspaceID != wsA || st.Title != "Ink" || st.Public ||
		!slices.Equal(st.Models, []string{"model-e-4", "model-c"}) || !slices.Equal(st.URLs, []string{"https://img.test/1.png", "https://img.test/2.png"}) {
		t.Errorf("stored %+v", st)
	}
	if st, _ := stylesdb.New(e.store()).Style(context.Background(), app); st.Owner != (style.Owner{Kind: style.OwnerApp, ID: annID, Name: "Ann"}) || st.Prompt != "grain\nwarm" {
		t.Errorf("the application user's style: %+v", st)
	}

	// A sees its own and the service's; B's public style waits for approval.
	if got := e.listStyles(t, apiA, style.All); !slices.Equal(got, sorted(own, svc)) {
		t.Errorf("A before approval and sharing: %v", got)
	}
	out := e.ok(t, "style", "approve", "--style", pub)
	if !reflect.DeepEqual(out, map[string]any{"style_id": pub, "approved": true}) {
		t.Errorf("approve printed %v", out)
	}
	out = e.ok(t, "style", "share-with-workspace", "--workspace", wsA, "--style", app)
	if !reflect.DeepEqual(out, map[string]any{"style_id": app, "shared_with": []any{wsA}}) {
		t.Errorf("share printed %v", out)
	}
	if got := e.listStyles(t, apiA, style.All); !slices.Equal(got, sorted(own, app, pub, svc)) {
		t.Errorf("A after approval and sharing: %v", got)
	}
	if got := e.listStyles(t, apiA, style.Community); !slices.Equal(got, []string{pub}) {
		t.Errorf("A's community: %v", got)
	}

	out = e.ok(t, "style", "feature", "--style", pub, "--editor")
	if !reflect.DeepEqual(out, map[string]any{"style_id": pub, "editors_pick": true, "gallery": false}) {
		t.Errorf("feature printed %v", out)
	}
	out = e.ok(t, "style", "feature", "--style", pub, "--gallery")
	if !reflect.DeepEqual(out, map[string]any{"style_id": pub, "editors_pick": true, "gallery": true}) {
		t.Errorf("second feature printed %v", out)
	}
	if got := e.listStyles(t, apiB, style.Gallery); !slices.Equal(got, []string{pub}) {
		t.Errorf("B's gallery: %v", got)
	}

	for i, want := range []map[string]any{
		{"style_id": svc, "like_count": 1.0, "is_new": true},
		{"style_id": svc, "like_count": 1.0, "is_new": false},
	} {
		if out := e.ok(t, "style", "like", "--workspace", wsA, "--style", svc); !reflect.DeepEqual(out, want) {
			t.Errorf("like %d printed %v; want %v", i, out, want)
		}
	}
	out = e.ok(t, "style", "like", "--workspace", wsA, "--app-user", annID, "--style", svc)
	if out["like_count"] != 2.0 {
		t.Errorf("the application user's like: %v", out)
	}
	p, err := stylesdb.New(e.store()).ListStyles(context.Background(), apiA, style.Query{Filter: style.All, Liked: true, Limit: 10})
	if err != nil || len(p.Styles) != 1 || p.Styles[0].ID != svc {
		t.Errorf("A's liked styles: %+v, %v", p.Styles, err)
	}
	// The application user's private style stays out of reach of B.
	e.fails(t, 1, "style "+app+" does not exist, or the user may not see it", "style", "like", "--workspace", wsB, "--style", app)
}

func TestStyleBadArguments(t *testing.T) {
	e := newEnv(t)
	base := []string{"--title", "T", "--prompt", "P", "--models", "model-e-4"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"style", "create"}, base...), "give --workspace W"},
		{append([]string{"style", "create", "--service", "--workspace", "ws_1"}, base...), "not both"},
		{append([]string{"style", "create", "--service", "--owner-name", "X"}, base...), "the service's styles have no owner"},
		{append([]string{"style", "create", "--workspace", "ws_1", "--owner-name", "X"}, base...), "--owner-name needs --app-user"},
		{append([]string{"style", "create", "--workspace", "ws_1", "--app-user", "ann"}, base...), `--app-user must be the application user's id, a UUID, not "ann"`},
		{[]string{"style", "create", "--service", "--prompt", "P", "--models", "model-e-4"}, "--title is required"},
		{[]string{"style", "create", "--service", "--title", "T", "--models", "model-e-4"}, "--prompt is required"},
		{[]string{"style", "create", "--service", "--title", "T", "--prompt", strings.Repeat("p", 2001), "--models", "model-e-4"}, "at most 2000"},
		{[]string{"style", "create", "--service", "--title", "T", "--prompt", "P"}, "--models is required"},
		{[]string{"style", "create", "--service", "--title", "T", "--prompt", "P", "--models", "model-z"}, `"model-z" is not one of standard-enhance`},
		{[]string{"style", "create", "--service", "--title", "T", "--prompt", "P", "--models", "model-c,,model-e-4"}, "--models has an empty entry"},
		{[]string{"style", "create", "--service", "--title", "T", "--prompt", "P", "--models", "model-c,model-c"}, "--models names model-c twice"},
		{append([]string{"style", "create", "--service", "--urls", "ftp://x/1.png"}, base...), `--urls: "ftp://x/1.png" is not an http(s) URL`},
		{append([]string{"style", "create", "--service", "--urls", strings.Repeat("https://x/1.png,", 10) + "https://x/1.png"}, base...), "--urls has 11 URLs; at most 10"},
		{[]string{"style", "like", "--style", "sty_1"}, "style like: --workspace is required"},
		{[]string{"style", "like", "--workspace", "ws_1"}, "style like: --style is required"},
		{[]string{"style", "like", "--workspace", "ws_1", "--style", "sty.1"}, `--style "sty.1" is not a style id`},
		{[]string{"style", "share-with-workspace", "--style", "sty_1"}, "--workspace is required"},
		{[]string{"style", "approve"}, "style approve: --style is required"},
		{[]string{"style", "feature", "--style", "sty_1"}, "give --editor or --gallery"},
		{[]string{"style", "feature", "--style", "sty_1", "--editor", "--gallery"}, "give --editor or --gallery, not both"},
		{[]string{"style"}, "style: missing subcommand"},
		{[]string{"style", "unlike"}, `unknown command "style unlike"`},
	} {
		e.fails(t, 2, tc.want, tc.args...)
	}
}

func TestStyleUnknownItems(t *testing.T) {
	e := newEnv(t)
	ws := e.ok(t, "workspace", "create", "--name", "A")["workspace_id"].(string)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"style", "create", "--workspace", "ws_nope", "--title", "T", "--prompt", "P", "--models", "model-c"}, "workspace ws_nope does not exist"},
		{[]string{"style", "like", "--workspace", "ws_nope", "--style", "sty_1"}, "workspace ws_nope does not exist"},
		{[]string{"style", "like", "--workspace", ws, "--style", "sty_nope"}, "style sty_nope does not exist"},
		{[]string{"style", "share-with-workspace", "--workspace", ws, "--style", "sty_nope"}, "style sty_nope does not exist"},
		{[]string{"style", "approve", "--style", "sty_nope"}, "style sty_nope does not exist"},
		{[]string{"style", "feature", "--style", "sty_nope", "--gallery"}, "style sty_nope does not exist"},
	} {
		e.fails(t, 1, tc.want, tc.args...)
	}
	id := e.ok(t, "style", "create", "--service", "--title", "T", "--prompt", "P", "--models", "model-c")["style_id"].(string)
	e.fails(t, 1, "workspace ws_nope does not exist", "style", "share-with-workspace", "--workspace", "ws_nope", "--style", id)
}
