package prices

import (
	"strings"
	"testing"

	"genjobs/internal/billing"
)

func TestComputeUnitsAreTheUSDPriceTimesTheSettingRoundedUp(t *testing.T) {
	def, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	over, err := Load([]byte(`{"compute_units_per_usd": 250}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		list *List
		usd  billing.Micros
		want billing.Units
	}{
		{def, 30_000, 3},      // model-e-4: 0.03 USD is 3 CU at the default 100
		{def, 1_209_500, 121}, // 120.95 rounds up
		{def, 1, 1},           // any fraction of a unit is a whole one
		{def, 0, 0},
		{over, 30_000, 8}, // 7.5 rounds up
		{over, 100_000, 25},
	} {
		if got, err := tc.list.Units(tc.usd); err != nil || got != tc.want {
			t.Errorf("Units(%s) = %d, %v; want %d", tc.usd, got, err, tc.want)
		}
	}
	// The override keeps the default prices of the paths it does not name.
	if p, err := over.Price("/generate/3d/vendor-g/model-g-3.1-rapid", nil); err != nil || p != 100_000 {
		t.Errorf("an override of the setting alone changed a price: %s, %v", p, err)
	}
	for _, bad := range []string{`0`, `-1`, `1.5`, `"100"`, `1000001`} {
		_, err := Load([]byte(`{"compute_units_per_usd": ` + bad + `}`))
		if err == nil || !strings.Contains(err.Error(), "compute_units_per_usd: must be a whole number from 1 to 1000000") {
			t.Errorf("compute_units_per_usd %s: %v; want a refusal naming the setting", bad, err)
		}
	}
}

// The console prices packs of compute units from the override alone
// (billing.OverrideUnitsPerUSD, without the price list's rules): the
// default file's conversion must be billing.DefaultUnitsPerUSD, and an
// override's must read the same both ways.
func TestTheConsolesConversionIsThePriceLists(t *testing.T) {
	for _, override := range []string{"", `{"compute_units_per_usd": 250}`, `{"/generate/3d/vendor-g/model-g-3.1-rapid": {"per": "job", "usd": "0.2"}}`} {
		list, err := Load([]byte(override))
		if err != nil {
			t.Fatal(err)
		}
		want, err := list.UnitsPerUSD()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := billing.OverrideUnitsPerUSD([]byte(override)); err != nil || got != want {
			t.Errorf("override %q: the console reads %d, %v; the price list %d", override, got, err, want)
		}
	}
	if _, err := billing.OverrideUnitsPerUSD([]byte(`{"compute_units_per_usd": 0}`)); err == nil {
		t.Error("an override of 0 units per USD was taken")
	}
}
