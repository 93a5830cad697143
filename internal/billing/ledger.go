package billing

import (
	"fmt"
	"sort"
	"time"
)

// Kind is what a ledger entry records. Every movement of a workspace's
// balances is one entry, written in the same transaction as the movement, so
// the balances can always be recomputed from the entries.
type Kind string

const (
	TopUp   Kind = "topup"   // a payment (USD) or a pack (CU): + available
	Reserve Kind = "reserve" // a job created: available -> reserved
	Charge  Kind = "charge"  // a job completed: reserved -> spent
	Release Kind = "release" // a job failed, was cancelled or timed out: reserved -> available
	// Allowance is a plan's monthly top-up of compute units: + available,
	// once per workspace and month.
	Allowance Kind = "allowance"
)

// Entry is one ledger entry, in one currency: Amount for USD, Units for
// compute units.
type Entry struct {
	Kind      Kind
	Currency  Currency // "" is USD (entries written before compute units)
	Amount    Micros   // USD
	Units     Units    // CU
	At        time.Time
	JobID     string // reserve, charge, release
	Endpoint  string // reserve, charge, release: the job's generation path
	PaymentID string // topup; allowance: the month's id (plan-2026-12)
	// By is who made the job of a charge in compute units (the person's
	// email), for the usage page's spend by person; "" on entries written
	// before it was recorded.
	By string
}

// InUnits reports whether e moves compute units rather than USD.
func (e Entry) InUnits() bool { return e.Currency == CurrencyCU }

// Outcome is the settlement a job's status calls for.
type Outcome int

const (
	Unsettled Outcome = iota // not ended: reserved only
	Charged                  // completed
	Released                 // failed, cancelled or timed out
)

func (o Outcome) String() string {
	return [...]string{"unsettled", "charged", "released"}[o]
}

// Audit recomputes both balances from the ledger and checks each job's
// entries against its status. It returns the recomputed balances and the
// differences found, in a stable order; none means the stored balances are
// exactly what the ledger says. jobs maps every job of the workspace to
// the outcome its status calls for. A job is billed in one currency: every
// entry of a job must be in the currency of its reservation.
func Audit(stored Balance, storedUnits UnitBalance, entries []Entry, jobs map[string]Outcome) (Balance, UnitBalance, []string) {
	type sums struct{ available, reserved, spent, credited int64 }
	var usd, cu sums
	type jobEntries struct {
		reserves, charges, releases int
		reserved, settled           int64
		currencies                  map[Currency]bool
	}
	per := map[string]*jobEntries{}
	for _, e := range entries {
		s, amount, cur := &usd, int64(e.Amount), CurrencyUSD
		if e.InUnits() {
			s, amount, cur = &cu, int64(e.Units), CurrencyCU
		}
		if e.Kind == TopUp || e.Kind == Allowance {
			s.credited += amount
			s.available += amount
			continue
		}
		je := per[e.JobID]
		if je == nil {
			je = &jobEntries{currencies: map[Currency]bool{}}
			per[e.JobID] = je
		}
		je.currencies[cur] = true
		switch e.Kind {
		case Reserve:
			s.available -= amount
			s.reserved += amount
			je.reserves++
			je.reserved += amount
		case Charge:
			s.reserved -= amount
			s.spent += amount
			je.charges++
			je.settled += amount
		case Release:
			s.reserved -= amount
			s.available += amount
			je.releases++
			je.settled += amount
		}
	}
	b := Balance{Available: Micros(usd.available), Reserved: Micros(usd.reserved), Spent: Micros(usd.spent), CreditLimit: stored.CreditLimit}
	u := UnitBalance{Available: Units(cu.available), Reserved: Units(cu.reserved), Spent: Units(cu.spent)}

	var diffs []string
	field := func(name string, stored, ledger Micros) {
		if stored != ledger {
			diffs = append(diffs, fmt.Sprintf("%s: stored %s, ledger %s", name, stored, ledger))
		}
	}
	field("available", stored.Available, b.Available)
	field("reserved", stored.Reserved, b.Reserved)
	field("spent", stored.Spent, b.Spent)
	if total := stored.Available + stored.Reserved + stored.Spent; total != Micros(usd.credited) {
		diffs = append(diffs, fmt.Sprintf("available + reserved + spent is %s, top-ups are %s", total, Micros(usd.credited)))
	}
	unitField := func(name string, stored, ledger Units) {
		if stored != ledger {
			diffs = append(diffs, fmt.Sprintf("cu %s: stored %s, ledger %s", name, stored, ledger))
		}
	}
	unitField("available", storedUnits.Available, u.Available)
	unitField("reserved", storedUnits.Reserved, u.Reserved)
	unitField("spent", storedUnits.Spent, u.Spent)
	if total := storedUnits.Available + storedUnits.Reserved + storedUnits.Spent; total != Units(cu.credited) {
		diffs = append(diffs, fmt.Sprintf("cu available + reserved + spent is %s, allowances and packs are %s", total, Units(cu.credited)))
	}
	if storedUnits.Available < 0 {
		diffs = append(diffs, fmt.Sprintf("cu available is %s, below zero", storedUnits.Available))
	}

	ids := make([]string, 0, len(jobs)+len(per))
	for id := range jobs {
		ids = append(ids, id)
	}
	for id := range per {
		if _, ok := jobs[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		je := per[id]
		if je == nil {
			je = &jobEntries{}
		}
		want, known := jobs[id]
		switch {
		case !known:
			diffs = append(diffs, fmt.Sprintf("job %s: ledger entries for a job that does not exist", id))
			continue
		case je.reserves != 1:
			diffs = append(diffs, fmt.Sprintf("job %s: %d reservations, want 1", id, je.reserves))
			continue
		case len(je.currencies) > 1:
			diffs = append(diffs, fmt.Sprintf("job %s: entries in both usd and cu", id))
			continue
		}
		got := Unsettled
		switch {
		case je.charges+je.releases > 1:
			diffs = append(diffs, fmt.Sprintf("job %s: settled %d times", id, je.charges+je.releases))
			continue
		case je.charges == 1:
			got = Charged
		case je.releases == 1:
			got = Released
		}
		if got != want {
			diffs = append(diffs, fmt.Sprintf("job %s: %s, its status calls for %s", id, got, want))
		}
		if got != Unsettled && je.settled != je.reserved {
			reserved, settled := Micros(je.reserved).String(), Micros(je.settled).String()
			if je.currencies[CurrencyCU] {
				reserved, settled = Units(je.reserved).String()+" cu", Units(je.settled).String()+" cu"
			}
			diffs = append(diffs, fmt.Sprintf("job %s: reserved %s, settled %s", id, reserved, settled))
		}
	}
	return b, u, diffs
}
