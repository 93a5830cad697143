package sam

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"genjobs/internal/app"
)

// The docs describe the stack template.yaml makes; these tests hold what
// they state of it (counts, the parameter table, the functions shown,
// visibility timeouts) to the template, so that a change to one that
// forgets the other fails.

// docPages are the pages that describe the stack: the README and docs/.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, p := range append(paths, filepath.Join(repo, "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, p)
		pages[filepath.ToSlash(rel)] = string(b)
	}
	return pages
}

var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}

// countClaim finds "<number> [up to three words] <kind>": "twelve small Go
// Lambda functions", "4 indexes", "the two buckets".
var countClaim = regexp.MustCompile(`(?i)\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|\d+)((?:\s+[A-Za-z0-9-]+){0,3}?)\s+(functions|queues|indexes|buckets|KMS keys)\b`)

// counts is what the template has of each kind a page may count.
func (t *Template) counts() map[string]int {
	out := map[string]int{}
	for _, r := range t.Resources {
		switch r.Type {
		case "AWS::Serverless::Function":
			out["functions"]++
		case "AWS::SQS::Queue":
			out["queues"]++
		case "AWS::S3::Bucket":
			out["buckets"]++
		case "AWS::KMS::Key":
			out["kms keys"]++
		case "AWS::DynamoDB::Table":
			gsis, _ := r.Properties["GlobalSecondaryIndexes"].([]any)
			out["indexes"] += len(gsis)
		}
	}
	return out
}

// notAnAdjective tells the words that end a counted phrase: a count and
// its noun are joined by adjectives ("small Go Lambda") and nothing else.
func notAnAdjective(w string) bool {
	return slices.Contains([]string{"of", "the", "a", "an", "across", "in", "on", "for", "to", "s", "and", "or",
		"with", "by", "per", "its", "their", "job", "jobs", "is", "are", "at"}, w)
}

// countClaims lists the counts a text states.
type claim struct {
	kind, text string
	n, line    int
}

func countClaims(text string) []claim {
	var out []claim
	for _, m := range countClaim.FindAllStringSubmatchIndex(text, -1) {
		if slices.ContainsFunc(strings.Fields(strings.ToLower(text[m[4]:m[5]])), notAnAdjective) {
			continue // "one job across functions", "9 s of the functions"
		}
		word := strings.ToLower(text[m[2]:m[3]])
		n, ok := numberWords[word]
		if !ok {
			n, _ = strconv.Atoi(word)
		}
		out = append(out, claim{kind: strings.ToLower(text[m[6]:m[7]]), n: n, text: strings.Join(strings.Fields(text[m[0]:m[1]]), " "),
			line: strings.Count(text[:m[0]], "\n") + 1})
	}
	return out
}

// Wherever a page counts the stack's functions, queues, indexes, buckets or
// keys, the count is the template's.
func TestCountsInTheDocsAreTheTemplates(t *testing.T) {
	have := loadRepoTemplate(t).counts()
	checked := 0
	for page, text := range docPages(t) {
		for _, c := range countClaims(text) {
			checked++
			if c.n != have[c.kind] {
				t.Errorf("%s:%d says %q; template.yaml has %d %s", page, c.line, c.text, have[c.kind], c.kind)
			}
		}
	}
	if checked == 0 {
		t.Error("no page counts anything of the stack: the check read nothing (docs/architecture.md names the counts)")
	}
}

func TestCountClaimsAreFound(t *testing.T) {
	got := countClaims("in front of twelve small Go Lambda\nfunctions, one table, four SQS queues and 2 buckets;\nthe four indexes; one KMS key;\n" +
		"one job across functions, the first 9 s of the functions")
	var s []string
	for _, c := range got {
		s = append(s, fmt.Sprintf("%s=%d@%d", c.kind, c.n, c.line))
	}
	if want := "[functions=12@1 queues=4@2 buckets=2@2 indexes=4@3]"; fmt.Sprint(s) != want {
		t.Errorf("countClaims = %v, want %s", s, want)
	}
}

// parameterTable reads the first table under "## Parameters" of a page:
// each row's parameter name (its first cell, in backticks) and its default.
func parameterTable(text string) (map[string]string, error) { return sectionTable(text, "Parameters") }

// sectionTable reads the first table of the section "## heading" of a
// page: its rows' first cells (in backticks) and their second cells.
func sectionTable(text, heading string) (map[string]string, error) {
	i := strings.Index(text, "\n## "+heading+"\n")
	if i < 0 {
		return nil, fmt.Errorf("no \"## %s\" section", heading)
	}
	rows := map[string]string{}
	inTable := false
	for _, line := range strings.Split(text[i+1:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		name := strings.TrimSpace(cells[0])
		if !strings.HasPrefix(name, "`") || len(cells) < 2 {
			continue // the header and its rule
		}
		rows[strings.Trim(name, "`")] = strings.TrimSpace(cells[1])
	}
	return rows, nil
}

// docs/operations.md's parameter table lists exactly the template's
// parameters, each with the template's default.
func TestTheParameterTableIsTheTemplates(t *testing.T) {
	tpl := loadRepoTemplate(t)
	text := docPages(t)["docs/operations.md"]
	rows, err := parameterTable(text)
	if err != nil {
		t.Fatalf("docs/operations.md: %v", err)
	}
	for name, p := range tpl.Parameters {
		cell, ok := rows[name]
		if !ok {
			t.Errorf("docs/operations.md's parameter table lacks %s", name)
			continue
		}
		if want, got := defaultText(p), strings.ReplaceAll(strings.ReplaceAll(cell, "`", ""), ",", ""); !strings.HasPrefix(got, want) {
			t.Errorf("docs/operations.md gives %s the default %q; template.yaml's is %s", name, cell, want)
		}
	}
	for name := range rows {
		if _, ok := tpl.Parameters[name]; !ok {
			t.Errorf("docs/operations.md's parameter table lists %s, which template.yaml does not have", name)
		}
	}
}

// docs/operations.md's table of outputs lists exactly the stack's outputs,
// each with what it is for: what `sam deploy` prints is all explained.
func TestTheOutputsTableIsTheTemplates(t *testing.T) {
	tpl := loadRepoTemplate(t)
	rows, err := sectionTable(docPages(t)["docs/operations.md"], "Outputs")
	if err != nil {
		t.Fatalf("docs/operations.md: %v", err)
	}
	for name := range tpl.Outputs {
		if cell, ok := rows[name]; !ok || cell == "" {
			t.Errorf("docs/operations.md's table of outputs lacks %s", name)
		}
	}
	for name := range rows {
		if _, ok := tpl.Outputs[name]; !ok {
			t.Errorf("docs/operations.md's table of outputs lists %s, which template.yaml does not have", name)
		}
	}
}

// defaultText is a parameter's default as the table writes it, without
// backticks or thousands separators: `""`, `false`, `3008`; "none" when
// the parameter has none (the cell then says "none: required").
func defaultText(p Parameter) string {
	switch d := p.Default.(type) {
	case nil:
		return "none"
	case string:
		if d == "" {
			return `""`
		}
		return d
	default:
		return fmt.Sprint(d)
	}
}

// The pictures of the stack (the README's, and docs/architecture.md's) and
// the architecture's table of functions show every function.
func TestThePicturesShowEveryFunction(t *testing.T) {
	pages := docPages(t)
	picture := func(page, after string) string {
		text := pages[page]
		i := strings.Index(text, after)
		if i < 0 {
			t.Fatalf("%s: no %q", page, after)
		}
		start := strings.Index(text[i:], "```")
		end := strings.Index(text[i+start+3:], "```")
		if start < 0 || end < 0 {
			t.Fatalf("%s: no picture after %q", page, after)
		}
		return text[i+start : i+start+3+end]
	}
	squash := func(s string) string {
		return strings.ToLower(strings.NewReplacer(" ", "", "-", "", "\n", "").Replace(s))
	}
	shows := map[string]string{
		"README.md's picture":                   squash(picture("README.md", "\n```\n")),
		"docs/architecture.md's picture":        squash(picture("docs/architecture.md", "## The picture")),
		"docs/architecture.md's function table": squash(functionTable(pages["docs/architecture.md"])),
	}
	for _, f := range loadRepoTemplate(t).Functions() {
		name := app.FunctionName(f.LogicalID)
		for where, text := range shows {
			if !strings.Contains(text, name) {
				t.Errorf("%s does not show %s (%s)", where, name, f.LogicalID)
			}
		}
	}
}

// functionTable is the first column of the table under "## The functions".
func functionTable(text string) string {
	i := strings.Index(text, "\n## The functions\n")
	if i < 0 {
		return ""
	}
	var names []string
	for _, line := range strings.Split(text[i:], "\n")[2:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if strings.HasPrefix(line, "| ") {
			names = append(names, strings.TrimSpace(strings.Split(line, "|")[1]))
		}
	}
	return strings.Join(names, " ")
}

// visibilityClaim finds a visibility timeout a page states: "visibility
// 180 s", "visibility timeout 720 s", "the queue's 180 s visibility".
var visibilityClaim = regexp.MustCompile(`(?i)visibility(?: timeout)?\s+(?:of\s+)?(\d+) s\b|\b(\d+) s visibility`)

// Every visibility timeout a page states is one of the template's queues'.
func TestVisibilityTimeoutsInTheDocsAreTheTemplates(t *testing.T) {
	var have []int
	for _, r := range loadRepoTemplate(t).Resources {
		if v, ok := r.Properties["VisibilityTimeout"].(int); ok && r.Type == "AWS::SQS::Queue" {
			have = append(have, v)
		}
	}
	for page, text := range docPages(t) {
		for _, m := range visibilityClaim.FindAllStringSubmatch(text, -1) {
			n, _ := strconv.Atoi(m[1] + m[2])
			if !slices.Contains(have, n) {
				t.Errorf("%s says %q; the template's queues have visibility timeouts %v", page, m[0], have)
			}
		}
	}
}
