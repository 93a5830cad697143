package billing

import (
	"slices"
	"testing"
	"time"
)

func TestAuditKeepsEachJobToItsCurrency(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	entries := []Entry{
		{Kind: TopUp, Amount: 10 * USD, At: at, PaymentID: "pay"},
		{Kind: Allowance, Currency: CurrencyCU, Units: 100, At: at, PaymentID: "plan-2026-12"},
		{Kind: Reserve, Currency: CurrencyCU, Units: 3, JobID: "cu-done"},
		{Kind: Charge, Currency: CurrencyCU, Units: 3, JobID: "cu-done"},
		{Kind: Reserve, Amount: 30_000, JobID: "usd-done"},
		{Kind: Charge, Amount: 30_000, JobID: "usd-done"},
		// Reserved in units, settled in dollars: a bug the audit names.
		{Kind: Reserve, Currency: CurrencyCU, Units: 10, JobID: "mixed"},
		{Kind: Release, Amount: 100_000, JobID: "mixed"},
	}
	jobs := map[string]Outcome{"cu-done": Charged, "usd-done": Charged, "mixed": Released}
	stored := Balance{Available: 10*USD - 30_000 + 100_000, Reserved: -100_000, Spent: 30_000}
	storedUnits := UnitBalance{Available: 87, Reserved: 10, Spent: 3}
	b, u, diffs := Audit(stored, storedUnits, entries, jobs)
	if u != storedUnits || b != stored {
		t.Errorf("recomputed %+v %+v; want %+v %+v", b, u, stored, storedUnits)
	}
	if !slices.Contains(diffs, "job mixed: entries in both usd and cu") {
		t.Errorf("differences %q; want the job billed in both currencies named", diffs)
	}
	// A clean ledger of both currencies: no difference.
	_, _, diffs = Audit(Balance{Available: 10*USD - 30_000, Spent: 30_000}, UnitBalance{Available: 97, Spent: 3}, entries[:6], map[string]Outcome{"cu-done": Charged, "usd-done": Charged})
	if len(diffs) != 0 {
		t.Errorf("differences of a clean ledger: %q", diffs)
	}
	if got := ToUnits(1_209_500, 100); got != 121 {
		t.Errorf("ToUnits(1.2095 USD, 100) = %d; want 121", got)
	}
}
