package client_test

import (
	"go/build"
	"strings"
	"testing"
)

// The package is for API users: it imports the standard library only, so
// that it can be copied or imported without the service's internals.
func TestImportsTheStandardLibraryOnly(t *testing.T) {
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") || first == "genjobs" {
			t.Errorf("client imports %s; it may import the standard library only", imp)
		}
	}
}
