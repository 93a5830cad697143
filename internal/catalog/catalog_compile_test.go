package catalog

import "testing"

// Schemas are read and validators compiled on first use, not by New: every
// embedded schema must still read and compile, or its endpoint's first
// request would fail.
func TestEverySchemaReadsAndCompiles(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Endpoints() {
		if err := e.parse(); err != nil {
			t.Errorf("%s: %v", e.Path(), err)
		}
		if _, err := e.schema(); err != nil {
			t.Errorf("%s: %v", e.Path(), err)
		}
	}
}
