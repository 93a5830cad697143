package billing

import "testing"

// A pack costs its units at the price file's conversion, rounded up to a
// cent; a pack under Stripe's 0.50 USD is not offered; anything but a pack
// offered is refused.
func TestPacksArePricedAtTheConversion(t *testing.T) {
	for _, c := range []struct {
		units  Units
		perUSD int64
		want   Micros
	}{
		{1000, 100, 10 * USD}, {5000, 100, 50 * USD}, {20_000, 100, 200 * USD}, {100_000, 100, 1000 * USD},
		{1000, 3, 333_340_000}, // 333.333... USD, rounded up to the cent
		{1000, 1000, USD},
	} {
		if got := PackPrice(c.units, c.perUSD); got != c.want {
			t.Errorf("PackPrice(%d, %d) = %s; want %s", c.units, c.perUSD, got, c.want)
		}
	}
	if got := OfferedPacks(100); len(got) != 4 {
		t.Errorf("at 100 per USD: %v; want the four packs", got)
	}
	if got := OfferedPacks(10_000); len(got) != 3 || got[0].Units != 5000 {
		t.Errorf("at 10,000 per USD: %v; want 5,000 (0.50 USD) and up, not 1,000 (0.10 USD)", got)
	}
	for _, bad := range []string{"", "3000", "1e3", "-1000", "1000.0", "0x3e8", "99999999999999999999"} {
		if p, err := ParsePack(bad, 100); err == nil {
			t.Errorf("ParsePack(%q) = %+v", bad, p)
		}
	}
	if p, err := ParsePack(" 5000 ", 100); err != nil || p != (Pack{5000, 50 * USD}) {
		t.Errorf("ParsePack(5000) = %+v, %v", p, err)
	}
	if got := Units(1234567).Grouped(); got != "1,234,567" {
		t.Errorf("Grouped: %q", got)
	}
}
