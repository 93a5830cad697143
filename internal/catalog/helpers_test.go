package catalog_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"genjobs/internal/catalog"
)

const prefix = "The request body is invalid: "

// beforeSunset is a day every deprecated field is still accepted on.
var beforeSunset = time.Date(2026, time.January, 15, 12, 0, 0, 0, time.UTC)

var (
	aliasSunset = time.Date(2026, time.June, 19, 0, 0, 0, 0, time.UTC)
	audioSunset = time.Date(2026, time.October, 30, 0, 0, 0, 0, time.UTC)
)

func newCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// endpoint finds an endpoint by its model segment.
func endpoint(t testing.TB, c *catalog.Catalog, model string) *catalog.Endpoint {
	t.Helper()
	for _, e := range c.Endpoints() {
		if e.Model == model {
			return e
		}
	}
	t.Fatalf("no endpoint %s", model)
	return nil
}

// minimal is the smallest valid body of each endpoint.
var minimal = map[string]map[string]any{
	"standard-enhance":  {"width": 1024, "height": 768, "image_url": "https://example.com/a.png", "model": "Standard V2"},
	"model-b-fast":      {"prompt": "a cat"},
	"model-c":           {"prompt": "a cat"},
	"model-d-flash-1.1": {"prompt": "a cat"},
	"model-e-4":         {"prompt": "a cat", "width": 1024, "height": 1024},
	"model-f-2.2":       {"prompt": "a cat", "width": 1280, "height": 720},
	"model-g-3.1-rapid": {},
}

// remove, as an edit value, deletes the field.
type remove struct{}

// edit returns base's JSON with fields set (or removed): key, value, key, value...
func edit(base map[string]any, kv ...any) []byte {
	m := map[string]any{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		if _, ok := kv[i+1].(remove); ok {
			delete(m, k)
		} else {
			m[k] = kv[i+1]
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// reason decodes body and returns the refusal's reason, failing the test on
// success or on any error that is not an *InvalidError.
func reason(t *testing.T, e *catalog.Endpoint, body []byte, now time.Time) string {
	t.Helper()
	req, err := e.Decode(body, now)
	if err == nil {
		t.Fatalf("%s accepted %s as %s", e.Model, clip(body), req.JSON())
		return ""
	}
	var inv *catalog.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("%s: %T %v, want *InvalidError", e.Model, err, err)
	}
	if err.Error() != prefix+inv.Reason {
		t.Fatalf("Error() = %q, want the prefix and the reason %q", err.Error(), inv.Reason)
	}
	return inv.Reason
}

func accept(t *testing.T, e *catalog.Endpoint, body []byte, now time.Time) *catalog.Request {
	t.Helper()
	req, err := e.Decode(body, now)
	if err != nil {
		t.Fatalf("%s refused %s: %v", e.Model, clip(body), err)
	}
	return req
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// url returns an https URL of exactly n characters.
func url(n int) string {
	const head = "https://example.com/"
	return head + strings.Repeat("a", n-len(head))
}
