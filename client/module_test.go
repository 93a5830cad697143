package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// outside is a program of another module, as a team's service would use
// the client.
const outside = `package main

import (
	"context"
	"fmt"
	"net/http"

	"genjobs/client"
)

func main() {
	c, err := client.NewClient(client.WithToken("gjs_example"), client.WithBaseURL("https://api.example.com"))
	if err != nil {
		panic(err)
	}
	_, err = c.Generate(context.Background(), &client.ModelE4Request{Prompt: "a red bicycle", Width: 1024, Height: 768})
	fmt.Println(err)
	http.Handle("/hooks/genjobs", c.WebhookVerifier("https://example.com/hooks/genjobs").Handler(
		func(ctx context.Context, ev *client.WebhookEvent) error { return nil }))
}
`

// TestBuildsInAnotherModule: a module outside this repository requires the
// client as the README says (its go.mod block, with the replace pointed at
// this directory) and builds offline, with no module proxy: the client
// module needs nothing but the standard library.
func TestBuildsInAnotherModule(t *testing.T) {
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	mod, ok := fenced(string(readme), "replace genjobs/client =>")
	if !ok {
		t.Fatal("README.md shows no go.mod block with a replace of genjobs/client")
	}
	var lines []string
	for _, l := range strings.Split(mod, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "replace genjobs/client =>") {
			l = "replace genjobs/client => " + here
		}
		lines = append(lines, l)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(outside), 0o644); err != nil {
		t.Fatal(err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to build another module with: %v", err)
	}
	cmd := exec.Command(gobin, "build", "-o", filepath.Join(dir, "outside"), ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in another module: %v\n%s\ngo.mod:\n%s", err, out, strings.Join(lines, "\n"))
	}
}

// fenced returns the first fenced block of doc that contains s.
func fenced(doc, s string) (string, bool) {
	parts := strings.Split(doc, "```")
	for i := 1; i < len(parts); i += 2 {
		if strings.Contains(parts[i], s) {
			block := parts[i]
			if nl := strings.IndexByte(block, '\n'); nl >= 0 {
				block = block[nl+1:] // the info string
			}
			return block, true
		}
	}
	return "", false
}
