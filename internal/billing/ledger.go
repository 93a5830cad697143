package billing

import (
	"fmt"
	"sort"
	"time"
)

// Kind is what a ledger entry records. Every movement of a workspace's
// balance is one entry, written in the same transaction as the movement, so
// the balance can always be recomputed from the entries.
type Kind string

const (
	TopUp   Kind = "topup"   // a payment: + available
	Reserve Kind = "reserve" // a job created: available -> reserved
	Charge  Kind = "charge"  // a job completed: reserved -> spent
	Release Kind = "release" // a job failed, was cancelled or timed out: reserved -> available
)

// Entry is one ledger entry.
type Entry struct {
	Kind      Kind
	Amount    Micros
	At        time.Time
	JobID     string // reserve, charge, release
	Endpoint  string // reserve, charge, release: the job's generation path
	PaymentID string // topup
}

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

// Audit recomputes a balance from its ledger and checks each job's entries
// against its status. It returns the recomputed balance and the differences
// found, in a stable order; none means the stored balance is exactly what
// the ledger says. jobs maps every job of the workspace to the outcome its
// status calls for.
func Audit(stored Balance, entries []Entry, jobs map[string]Outcome) (Balance, []string) {
	var b Balance
	var topUps Micros
	type jobEntries struct {
		reserves, charges, releases int
		reserved, settled           Micros
	}
	per := map[string]*jobEntries{}
	for _, e := range entries {
		if e.Kind == TopUp {
			topUps += e.Amount
			b.Available += e.Amount
			continue
		}
		je := per[e.JobID]
		if je == nil {
			je = &jobEntries{}
			per[e.JobID] = je
		}
		switch e.Kind {
		case Reserve:
			b.Available -= e.Amount
			b.Reserved += e.Amount
			je.reserves++
			je.reserved += e.Amount
		case Charge:
			b.Reserved -= e.Amount
			b.Spent += e.Amount
			je.charges++
			je.settled += e.Amount
		case Release:
			b.Reserved -= e.Amount
			b.Available += e.Amount
			je.releases++
			je.settled += e.Amount
		}
	}
	b.CreditLimit = stored.CreditLimit

	var diffs []string
	field := func(name string, stored, ledger Micros) {
		if stored != ledger {
			diffs = append(diffs, fmt.Sprintf("%s: stored %s, ledger %s", name, stored, ledger))
		}
	}
	field("available", stored.Available, b.Available)
	field("reserved", stored.Reserved, b.Reserved)
	field("spent", stored.Spent, b.Spent)
	if total := stored.Available + stored.Reserved + stored.Spent; total != topUps {
		diffs = append(diffs, fmt.Sprintf("available + reserved + spent is %s, top-ups are %s", total, topUps))
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
			diffs = append(diffs, fmt.Sprintf("job %s: reserved %s, settled %s", id, je.reserved, je.settled))
		}
	}
	return b, diffs
}
