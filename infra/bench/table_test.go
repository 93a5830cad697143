package main

import (
	"strings"
	"testing"
)

// The table aligns columns by characters, not bytes (², → in the subjects),
// right-aligns numbers, leaves no trailing blanks, prints a nil row as a
// rule and the notes under it.
func TestTablePrintsAlignedColumns(t *testing.T) {
	tb := newTable(column{title: "MEASURE"}, column{title: "N", right: true}, column{title: "NOTE"})
	tb.add("cold start", "20", "1.05x bare")
	tb.sep()
	tb.add("size", "", "")
	tb.add("enhance 1024² → 2048²", "7")
	tb.note("p99 is %s.", "nearest-rank")
	var b strings.Builder
	tb.print(&b)
	rule := strings.Repeat("-", 21+2+2+2+10)
	want := strings.Join([]string{
		"MEASURE                 N  NOTE",
		rule,
		"cold start             20  1.05x bare",
		rule,
		"size",
		"enhance 1024² → 2048²   7",
		"",
		"p99 is nearest-rank.",
		"",
	}, "\n")
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
