package provider_test

import (
	"os"
	"strings"
	"testing"

	"genjobs/internal/catalog"
	"genjobs/internal/provider"
)

// TestDocumentedRoutingParses: every routes document docs/providers.md
// shows (a JSON example keyed by endpoint paths) is valid: the Replicate
// routing of three endpoints and the fal routing among them.
func TestDocumentedRoutingParses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]int{}
	for rest := string(doc); ; {
		start := strings.Index(rest, "```json\n")
		if start < 0 {
			break
		}
		rest = rest[start+8:]
		end := strings.Index(rest, "```")
		if end < 0 {
			t.Fatal("an unclosed JSON example")
		}
		example := rest[:end]
		rest = rest[end+3:]
		if !strings.HasPrefix(strings.TrimSpace(example), `{
  "/generate/`) {
			continue // not a routes document
		}
		routes, err := provider.ParseRoutes(example, cat)
		if err != nil {
			t.Fatalf("%v in\n%s", err, example)
		}
		for _, r := range routes {
			providers[r.Provider]++
		}
	}
	if providers[provider.Replicate] != 3 || providers[provider.Fal] != 1 {
		t.Fatalf("routes by provider %v; the examples show 3 on Replicate and 1 on fal", providers)
	}
}
