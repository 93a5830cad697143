package provider_test

import (
	"os"
	"strings"
	"testing"

	"genjobs/internal/catalog"
	"genjobs/internal/provider"
)

// TestDocumentedRoutingParses: the Replicate routing docs/providers.md
// shows is a valid routes document.
func TestDocumentedRoutingParses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "```json\n")
	end := strings.Index(text[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatal("docs/providers.md has no JSON example")
	}
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	routes, err := provider.ParseRoutes(text[start+8:start+8+end], cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 3 {
		t.Fatalf("%d routes; the example shows 3", len(routes))
	}
}
