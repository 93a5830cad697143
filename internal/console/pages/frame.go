// Package pages is the console's HTML (docs/console.md, "Pages"): each page
// a templ component (a-h/templ) with typed parameters, compiled to Go by
// `make templ` (the *_templ.go files, committed), inside one Layout. No
// reflection renders them, and no page writes an inline script or style:
// the console's CSP allows neither.
package pages

import (
	"strconv"
	"strings"
	"time"

	"genjobs/internal/member"
)

// Frame is what the layout around every page shows: the title, the
// person signed in and their workspaces, the tabs, a notice.
type Frame struct {
	Title  string
	Nav    string // the active tab: "jobs", "tokens", "billing", "usage", "members", "connections", "security"
	Notice string // a confirmation after a redirect ("Token revoked.")

	Signed     bool
	Email      string
	CSRF       string
	Workspace  member.Membership
	Workspaces []member.Membership
	Back       string // the page's path, for the switcher to come back to

	CSS, JS string // the stylesheet's and the script's URLs
	// Refresh is how many seconds after which the page reloads itself
	// (a meta refresh, no script); 0 never. RefreshTo is the address it
	// then loads, "" the same.
	Refresh   int
	RefreshTo string
}

// refresh is the meta refresh's content: "3", or "3;url=/app/...".
func refresh(f Frame) string {
	s := strconv.Itoa(f.Refresh)
	if f.RefreshTo != "" {
		s += ";url=" + f.RefreshTo
	}
	return s
}

// Date is a day: "2 Jan 2006".
func Date(t time.Time) string { return t.UTC().Format("2 Jan 2006") }

// When is a moment to the minute: "2 Jan 2006, 15:04 UTC".
func When(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") }

// Hour is a moment to the hour, or "never".
func Hour(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format("2 Jan 2006, 15:00 UTC")
}

// Title is s with its first letter upper case.
func Title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// orText is s, or otherwise when s is empty.
func orText(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// prefixed is p+s, or "" when s is.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// yetIf is " yet" when cond holds.
func yetIf(cond bool) string {
	if cond {
		return " yet"
	}
	return ""
}

// whenOr is a moment to the minute, or "not yet".
func whenOr(t *time.Time) string {
	if t == nil {
		return "not yet"
	}
	return When(*t)
}

// statusCode is an HTTP status, or "" for none.
func statusCode(code int) string {
	if code == 0 {
		return ""
	}
	return strconv.Itoa(code)
}
