package billing

import "testing"

func TestParseTopUpAmount(t *testing.T) {
	for in, want := range map[string]Micros{"5": 5 * USD, "25": 25 * USD, "12.5": 12_500_000, "12.50": 12_500_000, " 100 ": 100 * USD, "10000": 10000 * USD, "10000.00": 10000 * USD} {
		if got, err := ParseTopUpAmount(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"4.99", "10000.01", "12.345", "1e3", "", "-5", "5.", ".5", "1,000", "0x10", "+5", "٥"} {
		if got, err := ParseTopUpAmount(in); err == nil {
			t.Errorf("%q: accepted as %v", in, got)
		}
	}
}

func TestDollarsIsExact(t *testing.T) {
	for m, want := range map[Micros]string{0: "0.00", 25 * USD: "25.00", 1234_500_000: "1,234.50", 258_000: "0.258", 1: "0.000001", -1_500_000: "-1.50", 1_000_000 * USD: "1,000,000.00"} {
		if got := m.Dollars(); got != want {
			t.Errorf("%d: %q, want %q", m, got, want)
		}
	}
}
