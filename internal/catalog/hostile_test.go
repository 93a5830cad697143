package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"genjobs/internal/catalog"
	"genjobs/internal/jsonbody"
)

// deepBody is a body whose field "prompt" is nested levels deep in arrays
// (the body itself being one more level).
func deepBody(levels int) []byte {
	return []byte(`{"prompt":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}`)
}

// A field nested exactly 10,000 levels used to decode (encoding/json gives
// each value its own depth) and then fail re-encoding the whole body: a
// 500. Every depth is the client's mistake, answered with a reason.
func TestDeepNestingIsRefusedAtEveryDepth(t *testing.T) {
	e, ok := newCatalog(t).ByPath("/generate/image/vendor-b/model-e-4")
	if !ok {
		t.Fatal("no endpoint")
	}
	for _, levels := range []int{jsonbody.MaxDepth, 9_999, 10_000, 10_001, 20_000} {
		_, err := e.Decode(deepBody(levels), beforeSunset)
		var inv *catalog.InvalidError
		if !errors.As(err, &inv) {
			t.Errorf("%d levels: %T %v; want *InvalidError", levels, err, err)
			continue
		}
		if inv.Reason != "the body is nested deeper than 64 levels" {
			t.Errorf("%d levels: %q", levels, inv.Reason)
		}
	}
	// Brackets inside strings are text, not nesting.
	body := []byte(`{"prompt":"` + strings.Repeat("[{", 200) + `\"` + `","width":128,"height":96}`)
	if _, err := e.Decode(body, beforeSunset); err != nil {
		t.Errorf("brackets in a string: %v", err)
	}
}

// encoding/json replaces invalid UTF-8 with U+FFFD, which made "a\xffb" and
// "a\ufffdb" one request under one Idempotency-Key.
func TestInvalidUTF8IsRefusedNamingTheField(t *testing.T) {
	e, ok := newCatalog(t).ByPath("/generate/image/vendor-b/model-e-4")
	if !ok {
		t.Fatal("no endpoint")
	}
	for body, want := range map[string]string{
		"{\"prompt\":\"a\xffb\"}":                        "prompt is not valid UTF-8",
		"{\"width\":128,\"prompt\":[\"x\",\"\xc3\"]}":    "prompt is not valid UTF-8",
		"{\"pro\xffmpt\":\"a\"}":                         "a field name is not valid UTF-8",
		"{\"prompt\":\"ok\",\"negative\xed\xa0\x80\":1}": "a field name is not valid UTF-8",
	} {
		_, err := e.Decode([]byte(body), beforeSunset)
		var inv *catalog.InvalidError
		if !errors.As(err, &inv) || inv.Reason != want {
			t.Errorf("%q: %v; want %q", body, err, want)
		}
	}
	// The replacement character itself, escaped or not, is valid text.
	for _, body := range []string{`{"prompt":"a\ufffdb","width":128,"height":96}`, "{\"prompt\":\"a\xef\xbf\xbdb\",\"width\":128,\"height\":96}"} {
		if _, err := e.Decode([]byte(body), beforeSunset); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}
