package billing

import (
	"sort"
	"time"
)

// Bounds of GET /usage?days= (docs/api.md, "Usage").
const (
	DefaultUsageDays = 7
	MaxUsageDays     = 90
)

// Usage is what a workspace was billed over a window: completed jobs only,
// by UTC day and by model.
type Usage struct {
	From, To time.Time
	Total    Micros
	Days     []DayUsage   // every day of the window, oldest first, zero days included
	Models   []ModelUsage // models with charges, by path
}

// DayUsage is one UTC day of a Usage.
type DayUsage struct {
	Date   string // 2006-01-02
	Amount Micros
	Jobs   int
}

// ModelUsage is one model's share of a Usage.
type ModelUsage struct {
	Path   string // the generation endpoint
	Amount Micros
	Jobs   int
}

// UsageWindow is the window of the last days UTC calendar days: from the
// start of the first of them to now, today included.
func UsageWindow(now time.Time, days int) (from, to time.Time) {
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return today.AddDate(0, 0, 1-days), now
}

// Summarize adds up the charges that fall in [from, to].
func Summarize(charges []Entry, from, to time.Time) Usage {
	u := Usage{From: from, To: to}
	index := map[string]int{}
	for d := from.UTC(); !d.After(to); d = d.AddDate(0, 0, 1) {
		date := d.Format(time.DateOnly)
		index[date] = len(u.Days)
		u.Days = append(u.Days, DayUsage{Date: date})
	}
	models := map[string]*ModelUsage{}
	for _, c := range charges {
		if c.Kind != Charge || c.At.Before(from) || c.At.After(to) {
			continue
		}
		u.Total += c.Amount
		if i, ok := index[c.At.UTC().Format(time.DateOnly)]; ok {
			u.Days[i].Amount += c.Amount
			u.Days[i].Jobs++
		}
		m := models[c.Endpoint]
		if m == nil {
			m = &ModelUsage{Path: c.Endpoint}
			models[c.Endpoint] = m
		}
		m.Amount += c.Amount
		m.Jobs++
	}
	for _, m := range models {
		u.Models = append(u.Models, *m)
	}
	sort.Slice(u.Models, func(i, j int) bool { return u.Models[i].Path < u.Models[j].Path })
	return u
}

// UnitUsage is what the application's jobs spent in compute units over a
// window: completed jobs only, by UTC day and by the person who made them.
type UnitUsage struct {
	Total  Units
	Jobs   int
	Days   []UnitDay    // every day of the window, oldest first, zero days included
	People []UnitPerson // people with charges, most spent first
}

// UnitDay is one UTC day of a UnitUsage.
type UnitDay struct {
	Date  string // 2006-01-02
	Units Units
	Jobs  int
}

// UnitPerson is one person's share of a UnitUsage; By is "" for charges
// written before their creator was recorded.
type UnitPerson struct {
	By    string
	Units Units
	Jobs  int
}

// SummarizeUnits adds up the charges in compute units that fall in
// [from, to], by day and by person.
func SummarizeUnits(charges []Entry, from, to time.Time) UnitUsage {
	var u UnitUsage
	index := map[string]int{}
	for d := from.UTC(); !d.After(to); d = d.AddDate(0, 0, 1) {
		date := d.Format(time.DateOnly)
		index[date] = len(u.Days)
		u.Days = append(u.Days, UnitDay{Date: date})
	}
	people := map[string]*UnitPerson{}
	for _, c := range charges {
		if c.Kind != Charge || !c.InUnits() || c.At.Before(from) || c.At.After(to) {
			continue
		}
		u.Total += c.Units
		u.Jobs++
		if i, ok := index[c.At.UTC().Format(time.DateOnly)]; ok {
			u.Days[i].Units += c.Units
			u.Days[i].Jobs++
		}
		p := people[c.By]
		if p == nil {
			p = &UnitPerson{By: c.By}
			people[c.By] = p
		}
		p.Units += c.Units
		p.Jobs++
	}
	for _, p := range people {
		u.People = append(u.People, *p)
	}
	sort.Slice(u.People, func(i, j int) bool {
		if u.People[i].Units != u.People[j].Units {
			return u.People[i].Units > u.People[j].Units
		}
		return u.People[i].By < u.People[j].By
	})
	return u
}
