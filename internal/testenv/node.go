package testenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"genjobs/internal/emulator"
)

// NodePackage returns the node binary for a test that runs npm package pkg,
// pinned by the package-lock.json of dir (a testdata directory of the
// repository), to check our code with an implementation written apart
// from it (what names that check in the failure). It fails the test, never
// skips it, saying what to run when node is missing or dir's node_modules
// does not hold the pinned version (make test installs them first).
func NodePackage(t testing.TB, dir, pkg, what string) string {
	t.Helper()
	install := "cd " + dir + " && npm ci --no-audit --no-fund --silent"
	if root, err := emulator.RepoRoot(); err == nil {
		if abs, err := filepath.Abs(dir); err == nil {
			if rel, err := filepath.Rel(root, abs); err == nil {
				install = "cd " + filepath.ToSlash(rel) + " && npm ci --no-audit --no-fund --silent"
			}
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed; %s needs Node.js 20 and then: %s", what, install)
	}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	var installed struct{ Version string }
	lb, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err == nil {
		err = json.Unmarshal(lb, &lock)
	}
	if err != nil {
		t.Fatalf("%s: %v", filepath.Join(dir, "package-lock.json"), err)
	}
	ib, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
	if err == nil {
		err = json.Unmarshal(ib, &installed)
	}
	want := lock.Packages["node_modules/"+pkg].Version
	if want == "" {
		t.Fatalf("%s pins no %s", filepath.Join(dir, "package-lock.json"), pkg)
	}
	if err != nil || installed.Version != want {
		t.Fatalf("%s %s is not installed (found %q, %v); run: %s", pkg, want, installed.Version, err, install)
	}
	return node
}
