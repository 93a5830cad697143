package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// column is one column of a table: its title and whether its cells are
// numbers, which read best right-aligned.
type column struct {
	title string
	right bool
}

// table is a plain-text table with aligned columns. Rows are added in order;
// a nil row prints as a separator line between groups of measurements.
type table struct {
	cols  []column
	rows  [][]string
	notes []string
}

func newTable(cols ...column) *table { return &table{cols: cols} }

// add appends a row; missing trailing cells print empty.
func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// sep appends a separator line.
func (t *table) sep() { t.rows = append(t.rows, nil) }

// note appends a footnote printed under the table.
func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

func (t *table) print(w io.Writer) {
	widths := t.widths()
	total := 0
	for _, n := range widths {
		total += n
	}
	total += 2 * (len(widths) - 1)
	rule := strings.Repeat("-", total)

	titles := make([]string, len(t.cols))
	for i, c := range t.cols {
		titles[i] = c.title
	}
	t.line(w, widths, titles)
	fmt.Fprintln(w, rule)
	for _, r := range t.rows {
		if r == nil {
			fmt.Fprintln(w, rule)
			continue
		}
		t.line(w, widths, r)
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range t.notes {
			fmt.Fprintln(w, n)
		}
	}
}

func (t *table) widths() []int {
	widths := make([]int, len(t.cols))
	for i, c := range t.cols {
		widths[i] = utf8.RuneCountInString(c.title)
	}
	for _, r := range t.rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	return widths
}

// line prints one row; the last column is not padded, so lines end without
// trailing blanks.
func (t *table) line(w io.Writer, widths []int, cells []string) {
	var b strings.Builder
	for i, c := range t.cols {
		cell := ""
		if i < len(cells) {
			cell = cells[i]
		}
		pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
		switch {
		case c.right:
			b.WriteString(pad + cell)
		case i == len(t.cols)-1:
			b.WriteString(cell)
		default:
			b.WriteString(cell + pad)
		}
		if i < len(t.cols)-1 {
			b.WriteString("  ")
		}
	}
	fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
}
