package openapi_test

import (
	"bytes"
	"testing"

	"genjobs/internal/catalog"
	"genjobs/internal/openapi"
	"genjobs/internal/openapi/published"
)

// The served document is published.json with the base URL put in: it must be
// exactly what Build makes for that base URL, or published.json is stale.
func TestPublishedDocumentIsCurrent(t *testing.T) {
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{
		"http://127.0.0.1:3000",
		"https://api.example.com",
		"https://abc123.execute-api.eu-west-1.amazonaws.com",
		`https://odd.example.com/a"b\c<d>&e`,
	} {
		want, err := openapi.Build(cat, base)
		if err != nil {
			t.Fatal(err)
		}
		if got := published.Document(base); !bytes.Equal(got, want) {
			t.Fatalf("Document(%q) differs from Build's: published.json is stale; run go generate ./internal/openapi/...", base)
		}
	}
}
