package catalog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"genjobs/internal/catalog"
)

// FuzzDecode: whatever the body, Decode does not panic, refuses only with an
// *InvalidError in our own words, and what it accepts stores as JSON that
// decodes again to the very same JSON.
//
//	go test ./internal/catalog -run '^$' -fuzz FuzzDecode -fuzztime 30s
func FuzzDecode(f *testing.F) {
	c := newCatalog(f)
	endpoints := c.Endpoints()
	for i, e := range endpoints {
		f.Add(uint8(i), edit(minimal[e.Model]), false)
		f.Add(uint8(i), []byte(full[e.Model]), false)
		f.Add(uint8(i), []byte(full[e.Model]), true)
		for _, a := range aliases[e.Model] {
			f.Add(uint8(i), edit(minimal[e.Model], a.replacement, remove{}, a.alias, a.value), false)
		}
	}
	f.Add(uint8(1), []byte(`{"prompt":"p","generate_audio":true,"seed":1e400,"reference_images":["data:image/png;base64,AAAA"]}`), false)
	f.Add(uint8(0), []byte(`{"width":1e3,"height":0.5e1,"sharpen":-0,"image_url":"https://a.b","model":"CGI"}`), false)
	f.Add(uint8(6), []byte(`{"mode":"image","image_urls":[]}`), false)
	f.Add(uint8(5), []byte(`{"prompt":"p","width":720,"height":1280,"aspect_ratio":"9:16"}`), false)
	for _, levels := range []int{9_999, 10_000, 10_001} { // encoding/json's limit, around one field
		f.Add(uint8(1), []byte(`{"prompt":`+strings.Repeat("[", levels)+strings.Repeat("]", levels)+`}`), false)
	}
	f.Add(uint8(1), []byte("{\"prompt\":\"a\xffb\"}"), false)

	f.Fuzz(func(t *testing.T, which uint8, body []byte, late bool) {
		e := endpoints[int(which)%len(endpoints)]
		now := beforeSunset
		if late {
			now = audioSunset
		}
		req, err := e.Decode(body, now)
		if err != nil {
			var inv *catalog.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("%T %v, want *InvalidError", err, err)
			}
			if !strings.HasPrefix(err.Error(), prefix) || inv.Reason == "" {
				t.Fatalf("error text %q", err.Error())
			}
			for _, foreign := range []string{"(root)", "Invalid type", "Does not match", "should be", "is not allowed"} {
				if strings.Contains(inv.Reason, foreign) {
					t.Fatalf("gojsonschema's wording leaked: %q", inv.Reason)
				}
			}
			return
		}
		stored := req.JSON()
		again, err := e.Decode(stored, now)
		if err != nil {
			t.Fatalf("stored %s, which decodes to %v", stored, err)
		}
		if !bytes.Equal(again.JSON(), stored) {
			t.Fatalf("not idempotent:\n%s\n%s", stored, again.JSON())
		}
		if len(again.Deprecations) != 0 {
			t.Fatalf("stored JSON still uses deprecated fields: %s", stored)
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(e.Schema(), &schema)
		for k := range req.Params {
			if _, ok := schema.Properties[k]; !ok {
				t.Fatalf("stored field %q is not in the schema", k)
			}
		}
	})
}
