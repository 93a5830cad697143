package catalog

import "testing"

// Validators are compiled on first use, not by New: every embedded schema
// must still compile, or its endpoint's first request would fail.
func TestEverySchemaCompiles(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Endpoints() {
		if _, err := e.schema(); err != nil {
			t.Errorf("%s: %v", e.Path(), err)
		}
	}
}
