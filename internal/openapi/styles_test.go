package openapi_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"genjobs/internal/style"
)

func TestStylePaths(t *testing.T) {
	_, _, doc := build(t)
	list := at(t, doc, path("/styles")+"/get").(map[string]any)
	if list["operationId"] != "listStyles" {
		t.Errorf("GET /styles operationId %v", list["operationId"])
	}
	params := map[string]map[string]any{}
	for _, p := range list["parameters"].([]any) {
		p := p.(map[string]any)
		if p["in"] != "query" {
			t.Errorf("parameter %v is not in the query", p["name"])
		}
		params[p["name"].(string)] = p["schema"].(map[string]any)
	}
	var names []string
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"cursor", "filter", "ids", "liked", "limit", "model", "user"}; !slices.Equal(names, want) {
		t.Errorf("parameters %v; want those of docs/api.md (Styles) %v", names, want)
	}
	if l := params["limit"]; l["type"] != "integer" || l["minimum"] != 1.0 || l["maximum"] != 1000.0 || l["default"] != 100.0 {
		t.Errorf("limit: %v", l)
	}
	var filters []any
	for _, f := range style.Filters {
		filters = append(filters, string(f))
	}
	if f := params["filter"]; !reflect.DeepEqual(f["enum"], filters) || f["default"] != "all" {
		t.Errorf("filter: %v; want the nine filters, default all", f)
	}
	if l := params["liked"]; l["type"] != "boolean" || l["default"] != false {
		t.Errorf("liked: %v", l)
	}
	var models []any
	for _, m := range style.Models {
		models = append(models, m)
	}
	if m := params["model"]; !reflect.DeepEqual(m["enum"], models) {
		t.Errorf("model: %v; want %v", m, models)
	}
	wantResponses(t, doc, list, map[string]string{"200": "StyleList", "400": "Error", "401": "Error", "503": "Error"})

	share := at(t, doc, path("/styles/{id}/share/link")+"/get").(map[string]any)
	if share["operationId"] != "getStyleShareLink" || at(t, share, "/parameters/0/name") != "id" || at(t, share, "/parameters/0/in") != "path" {
		t.Errorf("GET /styles/{id}/share/link: %v", share)
	}
	wantResponses(t, doc, share, map[string]string{"200": "ShareLink", "201": "ShareLink", "401": "Error", "404": "Error", "503": "Error"})
	if msg := errorExample(t, doc, share, "404"); msg != "Style not found or you are not the owner." {
		t.Errorf("404 example %q", msg)
	}
}

// The Style schema requires exactly the fields package style writes.
func TestStyleSchemaIsTheRecord(t *testing.T) {
	_, _, doc := build(t)
	schema := at(t, doc, "/components/schemas/Style").(map[string]any)
	var required []string
	for _, r := range schema["required"].([]any) {
		required = append(required, r.(string))
	}
	var fields []string
	rt := reflect.TypeFor[style.Record]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	if !slices.Equal(required, fields) {
		t.Errorf("Style requires %v; style.Record writes %v", required, fields)
	}
	var models []any
	for _, m := range style.Models {
		models = append(models, m)
	}
	if got := at(t, schema, "/properties/models/items/enum"); !reflect.DeepEqual(got, models) {
		t.Errorf("models enum %v; want %v", got, models)
	}

	s := validator(t, "StyleList")
	at0 := time.Date(2026, 11, 21, 20, 33, 0, 0, time.UTC)
	user := style.Style{ID: "sty_1", WorkspaceID: "ws_a", Owner: style.APIOwner("ws_a"), Title: "t", Models: []string{"model-e-4"}, CreatedAt: at0}
	service := style.Style{ID: "sty_2", Owner: style.Owner{Kind: style.OwnerService}, Models: []string{"model-c"}, CreatedAt: at0}
	page, err := json.Marshal(map[string]any{"items": []style.Record{user.Record("https://app.test"), service.Record("https://app.test")}, "next_cursor": nil})
	if err != nil {
		t.Fatal(err)
	}
	if !valid(t, s, string(page)) {
		t.Errorf("StyleList refused a page the handler writes: %s", page)
	}
	for _, bad := range []string{
		`{"items":[]}`,
		`{"items":[{"id":"sty_1"}],"next_cursor":null}`,
		strings.Replace(string(page), `"like_count":0`, `"like_count":0,"likes":0`, 1),
		strings.Replace(string(page), `"owner":null`, `"owner":{"id":"x"}`, 1),
	} {
		if valid(t, s, bad) {
			t.Errorf("StyleList accepted %s", bad)
		}
	}
	link := validator(t, "ShareLink")
	if !valid(t, link, `{"share_link":"https://app.test/styles/shared/abc","is_new":true}`) ||
		valid(t, link, `{"share_link":"https://app.test/styles/shared/abc"}`) {
		t.Error("ShareLink must require exactly share_link and is_new")
	}
}
