package main

import (
	"errors"
	"os"

	"genjobs/internal/catalog"
	"genjobs/internal/openapi"
)

// printOpenAPI writes the document GET /openapi.json serves locally, so
// that make test can lint it.
func printOpenAPI(args []string) error {
	if len(args) != 0 {
		return errors.New("usage: openapi")
	}
	cat, err := catalog.New()
	if err != nil {
		return err
	}
	doc, err := openapi.Build(cat, "http://127.0.0.1:3000")
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(doc, '\n'))
	return err
}
