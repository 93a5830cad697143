package billing

import (
	"errors"
	"strconv"
	"strings"
)

// Packs are the compute-unit packs an owner can buy (docs/console.md,
// "Compute units"): a pack is a top-up by checkout whose credit is compute
// units rather than USD, paid at the price file's conversion.
var Packs = []Units{1_000, 5_000, 20_000, 100_000}

// MinCharge is the smallest amount a card payment can be (Stripe's 0.50
// USD): a pack priced below it is not offered.
const MinCharge = 50 * Cent

// PackPrice is what pack u costs at perUSD compute units per USD: u /
// perUSD USD, rounded up to a whole cent (a checkout charges cents).
func PackPrice(u Units, perUSD int64) Micros {
	if u <= 0 || perUSD <= 0 {
		return 0
	}
	cents := (int64(u)*100 + perUSD - 1) / perUSD
	return Micros(cents) * Cent
}

// Pack is a pack offered: its units and its price.
type Pack struct {
	Units Units
	Price Micros
}

// OfferedPacks are the packs at perUSD, smallest first: every one of Packs
// whose price is at least MinCharge.
func OfferedPacks(perUSD int64) []Pack {
	var out []Pack
	for _, u := range Packs {
		if p := PackPrice(u, perUSD); p >= MinCharge {
			out = append(out, Pack{Units: u, Price: p})
		}
	}
	return out
}

// ErrUnknownPack: a pack form named no pack offered.
var ErrUnknownPack = errors.New("choose one of the packs offered")

// ParsePack reads the pack a form names (its units, "5000") and returns
// it, priced at perUSD; anything but a pack offered is ErrUnknownPack.
func ParsePack(s string, perUSD int64) (Pack, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return Pack{}, ErrUnknownPack
	}
	for _, p := range OfferedPacks(perUSD) {
		if p.Units == Units(n) {
			return p, nil
		}
	}
	return Pack{}, ErrUnknownPack
}

// Grouped writes u for people, thousands separated ("20,000").
func (u Units) Grouped() string {
	s := strconv.FormatInt(int64(u), 10)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}
