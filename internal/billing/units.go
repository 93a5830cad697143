package billing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Currency is what a job is billed in, fixed when it is created: jobs made
// with an API token in USD (the API balance), jobs made in the application
// or through an OAuth MCP connection in compute units (docs/api.md,
// "Compute units").
type Currency string

const (
	CurrencyUSD Currency = "usd"
	CurrencyCU  Currency = "cu"
)

// Units is an amount of compute units, the application's own currency: a
// whole number, never a fraction.
type Units int64

// String writes u as a whole number ("120").
func (u Units) String() string { return strconv.FormatInt(int64(u), 10) }

// DefaultUnitsPerUSD is how many compute units one USD of price costs when
// the price file does not say (1 CU = 0.01 USD).
const DefaultUnitsPerUSD = 100

// MaxUnitsPerUSD bounds the price file's compute_units_per_usd, so that the
// largest job's price in units fits an int64 with room to spare.
const MaxUnitsPerUSD = 1_000_000

// ToUnits is the price in compute units of a job whose USD price is m:
// ceil(m x perUSD), in integers (a fraction of a unit is a whole one).
func ToUnits(m Micros, perUSD int64) Units {
	if m <= 0 {
		return 0
	}
	n := int64(m) * perUSD
	u := n / int64(USD)
	if n%int64(USD) != 0 {
		u++
	}
	return Units(u)
}

// UnitBalance is a workspace's compute units, kept like its API balance:
// Available can be spent on new jobs, Reserved is held by jobs in flight,
// Spent is what completed jobs cost. Available + Reserved + Spent is the
// sum of what the plan's allowances and the packs credited. There is no
// credit: Available never goes below zero.
type UnitBalance struct {
	Available Units
	Reserved  Units
	Spent     Units
}

// Covers reports whether a new job of this price may be reserved.
func (b UnitBalance) Covers(price Units) bool { return b.Available >= price }

// ErrOutOfUnits: the workspace's compute units do not cover a new job's
// price (402). The API balance is never used instead.
var ErrOutOfUnits = errors.New("the workspace's compute units do not cover the job's price")

// MaxMonthlyUnits bounds a plan's monthly allowance an operator can set.
const MaxMonthlyUnits = 1_000_000_000

// Month is the UTC month of t as plans' top-ups are keyed: "2026-12".
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// UnitsPerUSDKey is the price file's one key that is not an endpoint path:
// how many compute units one USD of price costs.
const UnitsPerUSDKey = "compute_units_per_usd"

// ParseUnitsPerUSD reads the value of a price file's compute_units_per_usd:
// a whole number from 1 to MaxUnitsPerUSD.
func ParseUnitsPerUSD(raw json.RawMessage) (int64, error) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil || n < 1 || n > MaxUnitsPerUSD {
		return 0, fmt.Errorf("%s: must be a whole number from 1 to %d, not %s", UnitsPerUSDKey, MaxUnitsPerUSD, raw)
	}
	return n, nil
}

// OverrideUnitsPerUSD is the conversion a deployment's price override
// sets (its compute_units_per_usd), or DefaultUnitsPerUSD, the default
// price file's, when it sets none: for code that prices in compute units
// without the price list's rules (the console's packs). The price list
// (package prices) reads the same key with ParseUnitsPerUSD, and its test
// keeps the default file's value equal to DefaultUnitsPerUSD.
func OverrideUnitsPerUSD(override []byte) (int64, error) {
	if len(bytes.TrimSpace(override)) == 0 {
		return DefaultUnitsPerUSD, nil
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(override, &entries); err != nil {
		return 0, fmt.Errorf("billing: price override: not a JSON object: %w", err)
	}
	raw, ok := entries[UnitsPerUSDKey]
	if !ok {
		return DefaultUnitsPerUSD, nil
	}
	n, err := ParseUnitsPerUSD(raw)
	if err != nil {
		return 0, fmt.Errorf("billing: price override: %w", err)
	}
	return n, nil
}
