// Command gen writes published.json in the working directory: the OpenAPI
// document the openapi function serves (go generate ./internal/openapi/...,
// from package published).
package main

import (
	"fmt"
	"os"

	"genjobs/internal/catalog"
	"genjobs/internal/openapi"
	"genjobs/internal/openapi/published"
)

func main() {
	cat, err := catalog.New()
	if err == nil {
		var doc []byte
		if doc, err = openapi.Build(cat, published.BaseURL); err == nil {
			err = os.WriteFile("published.json", doc, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
