package pages

import (
	"net/url"

	"github.com/a-h/templ"

	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/member"
)

// Acting is what a signed-in page's forms send with every change: the
// session's CSRF token and the workspace the change is made in.
type Acting struct {
	CSRF      string
	Workspace member.Membership
}

// path is a console path with segment, an id from the table, escaped in
// it: "/app/settings/members/" + user + "/remove".
func path(prefix, segment, suffix string) templ.SafeURL {
	return templ.SafeURL(prefix + url.PathEscape(segment) + suffix)
}

// prefix is the first characters of a token as it shows them, "gjs_" for
// a token that kept none.
func prefix(t auth.Token) string {
	if t.Prefix == "" {
		return "gjs_"
	}
	return t.Prefix
}

// article is the indefinite article before a role's name: "a member", "an
// owner", "an admin".
func article(role string) string {
	if role == "member" {
		return "a"
	}
	return "an"
}

// bought is what a top-up by checkout buys: "1,000 CU" for a pack, "API
// balance" for a top-up of the API balance.
func bought(c billing.Checkout) string {
	if c.IsPack() {
		return c.Units.Grouped() + " CU"
	}
	return "API balance"
}

// paidAmount is a top-up's amount as its row shows it: what was credited
// once paid, what was asked before.
func paidAmount(c billing.Checkout) billing.Micros {
	if c.Status == billing.CheckoutPaid {
		return c.Credited
	}
	return c.Requested
}
