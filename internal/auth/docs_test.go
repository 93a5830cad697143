package auth_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"genjobs/internal/auth"
)

// TestDocsSayHowLongARevocationTakes: docs/api.md tells clients that a
// revoked token works for up to the cache's age, not that it stops at once.
func TestDocsSayHowLongARevocationTakes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## Authentication")
	if start < 0 {
		t.Fatal("docs/api.md has no Authentication section")
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	section = strings.Join(strings.Fields(section), " ")
	want := fmt.Sprintf("refused at most %d seconds after the change", int(auth.MaxCacheAge.Seconds()))
	if !strings.Contains(section, want) {
		t.Errorf("docs/api.md's Authentication section does not say a revoked token is %q", want)
	}
	if strings.Contains(section, "not cached") {
		t.Error("docs/api.md says tokens are not cached; each function instance remembers them for auth.MaxCacheAge")
	}
}
