// Package billing holds money, the workspace balance and the price list. Money
// is integer micro-USD everywhere inside the service; decimal text only at the
// edges.
package billing

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Micros is an amount in millionths of a US dollar.
type Micros int64

// USD is one dollar in Micros.
const USD Micros = 1_000_000

// ParseUSD reads a decimal dollar amount with at most six decimals ("25",
// "10.5", "0.000001"). It never goes through a float.
func ParseUSD(s string) (Micros, error) {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || (hasDot && frac == "") || len(frac) > 6 || strings.HasPrefix(whole, "+") {
		return 0, fmt.Errorf("%q is not a dollar amount with at most six decimals", s)
	}
	neg := strings.HasPrefix(whole, "-")
	digits := strings.TrimPrefix(whole, "-")
	for _, r := range digits + frac {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("%q is not a dollar amount with at most six decimals", s)
		}
	}
	if len(digits) > 12 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	w, _ := strconv.ParseInt(digits, 10, 64)
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	m := Micros(w)*USD + Micros(f)
	if neg {
		m = -m
	}
	return m, nil
}

// String writes m as a decimal dollar amount with six decimals ("25.000000").
func (m Micros) String() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Sprintf("%s%d.%06d", sign, m/USD, m%USD)
}

// Balance is a workspace's API balance. Available can be spent on new jobs;
// Reserved is held by jobs in flight; Spent is what completed jobs cost.
// Available + Reserved + Spent is always the sum of the top-ups.
//
// A workspace invoiced on Net 30 terms has a CreditLimit: its jobs may take
// Available down to -CreditLimit, and -Available (when negative) is what it
// owes for the month.
type Balance struct {
	Available   Micros
	Reserved    Micros
	Spent       Micros
	CreditLimit Micros
}

// Owed is what an invoiced workspace has used beyond its payments.
func (b Balance) Owed() Micros { return max(0, -b.Available) }

// Covers reports whether a new job of this price may be reserved: the
// available balance, plus the credit limit when invoiced, must cover it.
func (b Balance) Covers(price Micros) bool { return b.Available-price >= -b.CreditLimit }

// ErrInsufficientFunds: the balance does not cover a new job's price (402).
var ErrInsufficientFunds = errors.New("the API balance does not cover the job's price")

// MaxCreditLimit bounds a Net 30 credit limit an operator can set.
const MaxCreditLimit = 1_000_000 * USD

// Top-up bounds: a custom amount of 5 to 10000 USD (docs/api.md, "Balance and settlement").
const (
	MinTopUp = 5 * USD
	MaxTopUp = 10_000 * USD
)
