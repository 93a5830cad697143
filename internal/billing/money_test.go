package billing

import "testing"

func TestParseUSD(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Micros
	}{
		{"25", 25 * USD},
		{"10.5", 10_500_000},
		{"0.000001", 1},
		{"10000", 10_000 * USD},
		{"-1.25", -1_250_000},
	} {
		got, err := ParseUSD(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", ".5", "5.", "1.0000001", "1e3", "abc", "+5", "1,5", "9999999999999"} {
		if _, err := ParseUSD(bad); err == nil {
			t.Errorf("ParseUSD(%q) accepted", bad)
		}
	}
}

func TestMicrosString(t *testing.T) {
	for m, want := range map[Micros]string{0: "0.000000", 25 * USD: "25.000000", 1: "0.000001", -1_250_000: "-1.250000"} {
		if got := m.String(); got != want {
			t.Errorf("%d.String() = %q; want %q", m, got, want)
		}
	}
}
