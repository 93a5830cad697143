package pages

import "genjobs/internal/billing"

// usageRow is a day of the usage page's table: its API jobs in USD and its
// application jobs in compute units.
type usageRow struct {
	Date           string
	Jobs, UnitJobs int
	Amount         billing.Micros
	Units          billing.Units
}

// usageRows pairs the days of the USD usage and of the compute units (the
// same window, so the same days).
func usageRows(d UsageData) []usageRow {
	units := map[string]billing.UnitDay{}
	for _, u := range d.Units.Days {
		units[u.Date] = u
	}
	rows := make([]usageRow, len(d.Usage.Days))
	for i, day := range d.Usage.Days {
		u := units[day.Date]
		rows[i] = usageRow{Date: day.Date, Jobs: day.Jobs, Amount: day.Amount, UnitJobs: u.Jobs, Units: u.Units}
	}
	return rows
}

// apiJobs counts a USD usage's jobs.
func apiJobs(u billing.Usage) int {
	n := 0
	for _, d := range u.Days {
		n += d.Jobs
	}
	return n
}

// person names who made application jobs, or says it was not recorded.
func person(by string) string {
	if by == "" {
		return "(not recorded)"
	}
	return by
}
