package billing

import (
	"cmp"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TopUpPresets are the amounts the billing page offers, in USD.
var TopUpPresets = []int{10, 25, 50, 100}

// ParseTopUpAmount reads an amount typed into the top-up form: whole
// dollars or dollars and cents ("25", "12.50"), 5 to 10000. The error says
// what is wrong in words a person reads beside the field (as a sentence:
// capitalised, with a full stop).
func ParseTopUpAmount(s string) (Micros, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("enter an amount in USD")
	}
	whole, cents, hasDot := strings.Cut(s, ".")
	digits := func(x string) bool {
		for _, r := range x {
			if r < '0' || r > '9' {
				return false
			}
		}
		return true
	}
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("the amount must be positive")
	}
	if whole == "" || !digits(whole) || (hasDot && (cents == "" || !digits(cents))) {
		return 0, errors.New("enter the amount as a number of dollars, such as 25 or 12.50")
	}
	if len(cents) > 2 {
		return 0, errors.New("the amount can have at most two decimals (cents)")
	}
	if len(whole) > 7 {
		return 0, errors.New("the largest top-up is 10,000 USD")
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	c, _ := strconv.ParseInt((cents + "00")[:2], 10, 64)
	m := Micros(w)*USD + Micros(c)*Cent
	switch {
	case m < MinTopUp:
		return 0, errors.New("the smallest top-up is 5 USD")
	case m > MaxTopUp:
		return 0, errors.New("the largest top-up is 10,000 USD")
	}
	return m, nil
}

// Cent is one US cent in Micros: Stripe's amounts are in cents.
const Cent Micros = 10_000

// Cents is m in whole cents (m has no fraction of a cent for a top-up).
func (m Micros) Cents() int64 { return int64(m / Cent) }

// Dollars writes m for people, exactly: thousands separated, at least two
// decimals and as many more as m has ("25.00", "1,234.50", "0.258").
func (m Micros) Dollars() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	whole := strconv.FormatInt(int64(m/USD), 10)
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", int64(m%USD)), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return sign + whole + "." + frac
}

// CheckoutStatus is where a top-up by checkout stands.
type CheckoutStatus string

// A top-up starts pending. Only the payment provider's verified webhook
// credits it (paid, once; from any status, since the money arrived). A
// pending one ends failed (the provider's webhook, or a checkout session
// that could not be made), expired (the provider's webhook, or the sweeper
// once the session's life is over) or cancelled (the payer came back by
// the checkout's Cancel); none of those three has a credit.
const (
	CheckoutPending   CheckoutStatus = "pending"
	CheckoutPaid      CheckoutStatus = "paid"
	CheckoutFailed    CheckoutStatus = "failed"
	CheckoutExpired   CheckoutStatus = "expired"
	CheckoutCancelled CheckoutStatus = "cancelled"
)

// CheckoutLife is how long a checkout session can be paid (Stripe
// Checkout's default 24 hours): a top-up pending longer is expired.
const CheckoutLife = 24 * time.Hour

// Checkout is a top-up by external checkout: what the owner asked for, and
// what the provider's webhook said was paid. A top-up of the API balance
// credits USD; a pack (Units > 0) is paid in USD and credits its compute
// units, both fixed when the owner chose it.
type Checkout struct {
	ID          string
	WorkspaceID string
	Status      CheckoutStatus
	Requested   Micros // the form's amount, or the pack's price: what the session must total
	Credited    Micros // the checkout session's amount_total, once paid
	Units       Units  // a pack's compute units; 0 for a top-up of the API balance
	SessionID   string // the provider's checkout session
	CreatedBy   string // the owner's email
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// IsPack reports whether c buys compute units.
func (c Checkout) IsPack() bool { return c.Units > 0 }

// PaymentID is the ledger's payment id of a checkout session: the top-up
// is credited once per session, however often its webhook comes.
func PaymentID(sessionID string) string { return "checkout:" + sessionID }

// AuditCheckouts checks the top-ups by checkout against the ledger's top-up
// entries: a paid top-up has exactly one credit, of its session's payment
// id (PaymentID), in its currency and of its amount (a top-up's credited
// USD, a pack's units); a pending, failed, expired or cancelled one has
// none; and no checkout session is credited that no paid top-up names. It
// returns the differences found, in a stable order.
func AuditCheckouts(entries []Entry, checkouts []Checkout) []string {
	credits := map[string][]Entry{} // by payment id, checkout sessions only
	for _, e := range entries {
		if e.Kind == TopUp && strings.HasPrefix(e.PaymentID, PaymentID("")) {
			credits[e.PaymentID] = append(credits[e.PaymentID], e)
		}
	}
	var diffs []string
	named := map[string]bool{}
	for _, c := range checkouts {
		var got []Entry
		if c.SessionID != "" {
			got = credits[PaymentID(c.SessionID)]
		}
		what := "top-up"
		if c.IsPack() {
			what = "pack"
		}
		switch c.Status {
		case CheckoutPaid:
			named[PaymentID(c.SessionID)] = true
			switch {
			case c.SessionID == "" || len(got) == 0:
				diffs = append(diffs, fmt.Sprintf("%s %s is paid (%s) but the ledger has no credit of its checkout session %s", what, c.ID, c.credit(), cmp.Or(c.SessionID, "(none)")))
			case len(got) > 1:
				diffs = append(diffs, fmt.Sprintf("%s %s: the ledger credits its checkout session %s %d times", what, c.ID, c.SessionID, len(got)))
			case got[0].InUnits() != c.IsPack():
				diffs = append(diffs, fmt.Sprintf("%s %s is paid %s but the ledger credited %s", what, c.ID, c.credit(), credit(got[0])))
			case c.IsPack() && got[0].Units != c.Units, !c.IsPack() && got[0].Amount != c.Credited:
				diffs = append(diffs, fmt.Sprintf("%s %s is paid %s but the ledger credited %s", what, c.ID, c.credit(), credit(got[0])))
			}
		case CheckoutPending, CheckoutFailed, CheckoutExpired, CheckoutCancelled:
			if len(got) > 0 {
				named[PaymentID(c.SessionID)] = true
				diffs = append(diffs, fmt.Sprintf("%s %s is %s but the ledger credited its checkout session %s %s", what, c.ID, c.Status, c.SessionID, credit(got[0])))
			}
		default:
			diffs = append(diffs, fmt.Sprintf("%s %s has the unknown status %q", what, c.ID, c.Status))
		}
	}
	var orphans []string
	for id, es := range credits {
		if !named[id] {
			orphans = append(orphans, fmt.Sprintf("the ledger credits %s (%s), which no top-up by checkout names", id, credit(es[0])))
		}
	}
	sort.Strings(orphans)
	return append(diffs, orphans...)
}

// credit is what a paid top-up credits, in its currency: "10.00 USD",
// "5,000 CU".
func (c Checkout) credit() string {
	if c.IsPack() {
		return c.Units.Grouped() + " CU"
	}
	return c.Credited.Dollars() + " USD"
}

// credit is what a top-up entry credits, in its currency.
func credit(e Entry) string {
	if e.InUnits() {
		return e.Units.Grouped() + " CU"
	}
	return e.Amount.Dollars() + " USD"
}
