// Command gen writes published.json, the OpenAPI document the openapi
// function serves (go generate ./internal/openapi).
package main

import (
	"fmt"
	"os"

	"genjobs/internal/catalog"
	"genjobs/internal/openapi"
)

func main() {
	cat, err := catalog.New()
	if err == nil {
		var doc []byte
		if doc, err = openapi.Build(cat, openapi.PublishedBaseURL); err == nil {
			err = os.WriteFile("published.json", doc, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
