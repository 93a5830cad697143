package repocheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// outsideDocuments are names of documents that live outside the repository
// (the working notes of the people who built it). A reader of the
// repository does not have them, so no tracked file may point at them: what
// they decided is written into docs/. Spelled in two parts so that this file
// does not name them itself.
var outsideDocuments = []string{
	"API-" + "DECISIONS",
	"LOCAL-" + "STACK",
	"HOUSE-" + "STYLE",
	"../" + "shared/",
}

// maxTrackedBytes bounds a tracked file outside testdata/: anything larger is
// build output or data that every clone would download forever.
const maxTrackedBytes = 1_000_000

// tracked is one file of git's index.
type tracked struct {
	path string // relative to the repository root, slash-separated
	mode string // git's mode: 100644, 100755, 120000 (a symlink), 160000 (a submodule)
}

// repository returns the root of the clone this test runs in and its
// tracked files. The checks are about what git tracks, so they need git and
// a clone; without them the test fails saying so rather than passing.
func repository(t *testing.T) (string, []tracked) {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the repository checks run in a git clone with git installed: git rev-parse: %v", err)
	}
	root := strings.TrimSpace(string(out))
	out, err = exec.Command("git", "-C", root, "ls-files", "--stage", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []tracked
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			t.Fatalf("git ls-files: unexpected record %q", rec)
		}
		files = append(files, tracked{path: path, mode: strings.Fields(meta)[0]})
	}
	if len(files) == 0 {
		t.Fatal("git ls-files listed no file")
	}
	return root, files
}

// read returns a tracked file's bytes, or false when it is not a regular
// file in the work tree (a symlink, a submodule, or deleted and not yet
// committed).
func read(t *testing.T, root string, f tracked) ([]byte, bool) {
	t.Helper()
	if f.mode != "100644" && f.mode != "100755" {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.path)))
	if os.IsNotExist(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return data, true
}

func TestNoTrackedFileNamesADocumentOutsideTheRepository(t *testing.T) {
	root, files := repository(t)
	for _, f := range files {
		data, ok := read(t, root, f)
		if !ok {
			continue
		}
		for _, m := range outsideMentions(data) {
			t.Errorf("%s:%s; write what the reader needs into docs/ and point there", f.path, m)
		}
	}
}

// citesTheContract finds a citation of the interface document the service
// was built from (the word spec and a section number, or "the" before it),
// which the repository
// does not have: the contract a reader has is docs/api.md, and its sections
// are what code points at (docs/api.md, "Styles"), which the pointer check
// below verifies.
var citesTheContract = regexp.MustCompile(`(?i)\bspec \d|\bthe spec('s)?\b`)

func TestNoTrackedFileCitesADocumentByNumber(t *testing.T) {
	root, files := repository(t)
	for _, f := range files {
		if strings.HasPrefix(f.path, "third_party/") {
			continue // others' code, citing their own specifications
		}
		data, ok := read(t, root, f)
		if !ok {
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := citesTheContract.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, a document the repository does not have: point at a section of docs/api.md instead (docs/api.md, \"Styles\")", f.path, i+1, m)
			}
		}
	}
}

func TestNoBuildOutputIsTracked(t *testing.T) {
	root, files := repository(t)
	for _, f := range files {
		data, ok := read(t, root, f)
		if !ok {
			continue
		}
		if why := buildOutput(f.path, f.mode, data); why != "" {
			t.Errorf("%s %s: git rm --cached it; build outputs belong in .gitignore, test inputs under testdata/", f.path, why)
		}
	}
}

func TestPointersIntoDocsLeadToAPageAndSection(t *testing.T) {
	root, files := repository(t)
	headings := map[string][]string{} // docs page -> its headings
	for _, f := range files {
		if dir, name := filepath.Split(f.path); dir == "docs/" && strings.HasSuffix(name, ".md") {
			data, ok := read(t, root, f)
			if ok {
				headings[name] = markdownHeadings(data)
			}
		}
	}
	for _, f := range files {
		if strings.HasSuffix(f.path, ".md") {
			continue // pages link each other, some to pages that arrive later
		}
		data, ok := read(t, root, f)
		if !ok {
			continue
		}
		for _, p := range docPointers(data) {
			hs, known := headings[p.page]
			switch {
			case !known:
				t.Errorf("%s:%d points at docs/%s, which does not exist", f.path, p.line, p.page)
			case p.section != "" && !slices.Contains(hs, p.section):
				t.Errorf("%s:%d points at docs/%s, %q: no such heading there (headings: %s)",
					f.path, p.line, p.page, p.section, strings.Join(hs, "; "))
			}
		}
	}
}

// The checks catch what they name, and let through what they must: each
// case is a file the repository could hold.
func TestTheChecksTellBuildOutputAndOutsideDocumentsApart(t *testing.T) {
	elf := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...)
	pe := make([]byte, 0x80)
	copy(pe, "MZ")
	binary.LittleEndian.PutUint32(pe[0x3c:], 0x40)
	copy(pe[0x40:], "PE\x00\x00")
	big := bytes.Repeat([]byte("a line of text\n"), maxTrackedBytes/15+1)
	for _, c := range []struct {
		path, mode string
		data       []byte
		flagged    bool
	}{
		{"local", "100755", elf, true},
		{"bin/worker/bootstrap", "100644", elf, true}, // not executable in git, still a binary
		{"tools/admin.exe", "100644", pe, true},
		{"bench", "100755", []byte("\xcf\xfa\xed\xfe\x07\x00\x00\x01" + "\x00\x00"), true}, // Mach-O 64
		{"data.bin", "100755", []byte("\x01\x02\x00\x03"), true},                           // executable and not text
		{"fixtures.json", "100644", big, true},
		{"internal/engine/testdata/big.jpg", "100644", big, false},
		{"internal/engine/testdata/a.out", "100755", elf, false},
		{".ci/run", "100755", []byte("#!/usr/bin/env bash\nmake test\n"), false},
		{"README.md", "100644", []byte("MZ is how a DOS program starts\n"), false},
		{"go.sum", "100644", bytes.Repeat([]byte("x"), maxTrackedBytes), false}, // exactly at the bound
	} {
		if got := buildOutput(c.path, c.mode, c.data) != ""; got != c.flagged {
			t.Errorf("buildOutput(%s, %s) flagged = %v, want %v", c.path, c.mode, got, c.flagged)
		}
	}

	text := "package x\n\n// Size limits (" + outsideDocuments[0] + " 2).\nconst a = 1\n// see " + outsideDocuments[3] + "tools\n"
	got := outsideMentions([]byte(text))
	want := []string{"3: names " + outsideDocuments[0], "5: names " + outsideDocuments[3]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outsideMentions = %q, want %q", got, want)
	}
	for text, cites := range map[string]bool{
		"// The styles endpoints (spe" + "c 4.8, 4.9).": true, "// in the spe" + "c's order": true, "per Spe" + "c 9,": true,
		"// the styles endpoints (docs/api.md, \"Styles\")": false, "// a specification": false, "// inspect 4 rows": false,
	} {
		if got := citesTheContract.MatchString(text); got != cites {
			t.Errorf("citesTheContract(%q) = %v, want %v", text, got, cites)
		}
	}
	if got := outsideMentions([]byte("see docs/local-stack.md and the house style\n")); len(got) != 0 {
		t.Errorf("a pointer into docs/ was taken for an outside document: %q", got)
	}

	src := "// Size limits (docs/api.md, \"Assets\").\n" +
		"// default 16:9 (docs/api.md,\n// \"Choices per model\") when\n" +
		"      # passed (docs/operations.md,\n      \"Quotas\"). Empty\n" +
		"// a receiver works (docs/local-stack.md: private destinations)\n" +
		"// the ES256 JWT of docs/api.md (\"Webhooks\"), the signers\n"
	wantPointers := []pointer{{"api.md", "Assets", 1}, {"api.md", "Choices per model", 2},
		{"operations.md", "Quotas", 4}, {"local-stack.md", "", 6}, {"api.md", "Webhooks", 7}}
	if got := docPointers([]byte(src)); fmt.Sprint(got) != fmt.Sprint(wantPointers) {
		t.Errorf("docPointers = %v\nwant %v", got, wantPointers)
	}
	if hs := markdownHeadings([]byte("# Title\n\ntext\n## Key rotation\n```sh\n# a comment\n```\n### Prices\n")); fmt.Sprint(hs) != "[Title Key rotation Prices]" {
		t.Errorf("markdownHeadings = %q", hs)
	}
}

// buildOutput says why a tracked file looks like build output, or "". Files
// under a testdata directory are exempt: tests may need large or binary
// inputs.
func buildOutput(path, mode string, data []byte) string {
	if inTestdata(path) {
		return ""
	}
	if kind := executableFormat(data); kind != "" {
		return "is an executable binary (" + kind + ")"
	}
	if mode == "100755" && isBinary(data) {
		return "is executable and not text"
	}
	if len(data) > maxTrackedBytes {
		return fmt.Sprintf("is %d bytes; tracked files outside testdata/ stay within 1 MB", len(data))
	}
	return ""
}

func inTestdata(path string) bool {
	for _, part := range strings.Split(path, "/") {
		if part == "testdata" {
			return true
		}
	}
	return false
}

// executableFormat names the executable format data starts with, or "".
func executableFormat(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		return "ELF"
	case bytes.HasPrefix(data, []byte("\xfe\xed\xfa\xce")), bytes.HasPrefix(data, []byte("\xce\xfa\xed\xfe")),
		bytes.HasPrefix(data, []byte("\xfe\xed\xfa\xcf")), bytes.HasPrefix(data, []byte("\xcf\xfa\xed\xfe")):
		return "Mach-O"
	case bytes.HasPrefix(data, []byte("\xca\xfe\xba\xbe")):
		return "Mach-O universal or Java class"
	case bytes.HasPrefix(data, []byte("\x00asm")):
		return "WebAssembly"
	case bytes.HasPrefix(data, []byte("MZ")) && len(data) >= 0x40:
		off := int(binary.LittleEndian.Uint32(data[0x3c:]))
		if off >= 0 && off+4 <= len(data) && string(data[off:off+4]) == "PE\x00\x00" {
			return "PE"
		}
	}
	return ""
}

// isBinary reports whether data looks like something other than text: a NUL
// byte in its first 8000 bytes, as git itself decides.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// outsideMentions lists "line: names X" for each line of data that names an
// outside document.
func outsideMentions(data []byte) []string {
	var out []string
	for i, line := range bytes.Split(data, []byte("\n")) {
		for _, name := range outsideDocuments {
			if bytes.Contains(line, []byte(name)) {
				out = append(out, fmt.Sprintf("%d: names %s", i+1, name))
			}
		}
	}
	return out
}

// pointer is a reference from code to a page of docs/ and, when it names
// one, a section: `docs/api.md, "Assets"` or `docs/api.md ("Webhooks")`.
type pointer struct {
	page, section string
	line          int
}

// pointerRE finds docs/<page>.md and the quoted section that may follow it,
// after a comma or an opening parenthesis, possibly on the next comment line.
var pointerRE = regexp.MustCompile(`docs/([a-z0-9-]+\.md)(?:(?:,| \()\s*(?:(?://|#)\s*)?"([^"\n]+)")?`)

func docPointers(data []byte) []pointer {
	var out []pointer
	for _, m := range pointerRE.FindAllSubmatchIndex(data, -1) {
		p := pointer{page: string(data[m[2]:m[3]]), line: bytes.Count(data[:m[0]], []byte("\n")) + 1}
		if m[4] >= 0 {
			p.section = string(data[m[4]:m[5]])
		}
		out = append(out, p)
	}
	return out
}

// markdownHeadings lists the text of a page's ATX headings, outside code
// fences.
func markdownHeadings(data []byte) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		if text := strings.TrimLeft(line, "#"); strings.HasPrefix(text, " ") {
			out = append(out, strings.TrimSpace(text))
		}
	}
	return out
}

// maxPackageLines bounds a package under internal/: its non-test Go files'
// lines, generated files (the console's compiled pages) left out. A
// package past it holds more than one idea, and is split. The bound
// constrains: it is at most 10 % above the largest package
// (limitSlack), which TestNoInternalPackageIsTooLarge checks too, so that a
// package that shrinks brings the bound down with it. The largest is
// internal/engine/enhance (2,687 lines; the console, 2,699 before its
// billing and usage pages became internal/console/money, 2,452).
const maxPackageLines = 2700

// limitSlack is how far above the largest package maxPackageLines may be:
// 10 %.
const limitSlack = 1.10

// generated is Go's mark of a generated file, on a line of its own before
// the package clause (go help generate).
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// No package under internal/ is over maxPackageLines lines of non-test Go.
func TestNoInternalPackageIsTooLarge(t *testing.T) {
	root, files := repository(t)
	lines := map[string]int{}
	for _, f := range files {
		if !strings.HasPrefix(f.path, "internal/") || !strings.HasSuffix(f.path, ".go") || strings.HasSuffix(f.path, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if head, _, _ := bytes.Cut(b, []byte("\npackage ")); generated.Match(head) {
			continue
		}
		lines[filepath.Dir(f.path)] += bytes.Count(b, []byte("\n"))
	}
	if len(lines) == 0 {
		t.Fatal("no Go files under internal/: the check read nothing")
	}
	largest := ""
	for _, dir := range slices.Sorted(maps.Keys(lines)) {
		if n := lines[dir]; n > maxPackageLines {
			t.Errorf("%s: %d lines of non-test Go, over %d: split it into packages named for what they are", dir, n, maxPackageLines)
		}
		if largest == "" || lines[dir] > lines[largest] {
			largest = dir
		}
	}
	if n := lines[largest]; float64(maxPackageLines) > limitSlack*float64(n) {
		t.Errorf("maxPackageLines is %d, more than 10 %% above the largest package (%s, %d lines): lower it to at most %d, so that it constrains",
			maxPackageLines, largest, n, int(limitSlack*float64(n)))
	}
}

// Code under internal/ is the service; infra/ is the tooling around it (the
// local stack, the bench, the operator CLI), which may use the service but
// not the other way round, tests included: a test under internal/ that
// needs the whole local stack lives with the stack.
func TestNothingUnderInternalImportsInfra(t *testing.T) {
	root, files := repository(t)
	read := 0
	for _, f := range files {
		if !strings.HasPrefix(f.path, "internal/") || !strings.HasSuffix(f.path, ".go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		read++
		bad, err := infraImports(f.path, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range bad {
			t.Errorf("%s imports %s: move what it needs below internal/, or the file out of it", f.path, p)
		}
	}
	if read == 0 {
		t.Fatal("no Go files under internal/: the check read nothing")
	}
}

// infraImports lists the packages under infra/ a Go file imports.
func infraImports(name string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		if p == "genjobs/infra" || strings.HasPrefix(p, "genjobs/infra/") {
			out = append(out, p)
		}
	}
	return out, nil
}

func TestInfraImportsFindsTheToolingAmongAFilesImports(t *testing.T) {
	src := "package x_test\n\nimport (\n\t\"testing\"\n\n\tsam \"genjobs/infra/local/sam\"\n\t\"genjobs/infrastructure\"\n\t\"genjobs/internal/emulator\"\n\t_ \"genjobs/infra/bench\"\n)\n"
	got, err := infraImports("x_test.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if want := "[genjobs/infra/local/sam genjobs/infra/bench]"; fmt.Sprint(got) != want {
		t.Errorf("infraImports = %v, want %s", got, want)
	}
}
