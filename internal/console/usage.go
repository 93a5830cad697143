package console

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"

	"genjobs/internal/billing"
	"genjobs/internal/console/chart"
	"genjobs/internal/console/pages"
)

// UsageChoices are the windows the usage page offers, in days.
var UsageChoices = []int{7, 30, 90}

func usageDays(r *http.Request) (int, bool) {
	v := r.URL.Query().Get("days")
	if v == "" {
		return billing.DefaultUsageDays, true
	}
	n, err := strconv.Atoi(v)
	for _, c := range UsageChoices {
		if err == nil && n == c {
			return n, true
		}
	}
	return 0, false
}

func (c *Console) usage(w http.ResponseWriter, r *http.Request, req *request) (billing.Usage, int, bool) {
	days, ok := usageDays(r)
	if !ok {
		c.fail(w, r, http.StatusBadRequest, "Usage is shown for 7, 30 or 90 days.")
		return billing.Usage{}, 0, false
	}
	// The same window and sum as GET /usage (httpapi.Usage).
	from, to := billing.UsageWindow(c.Clock.Now(), days)
	charges, err := c.Ledger.Charges(r.Context(), req.current.WorkspaceID, from, to)
	if err != nil {
		c.internalError(w, r, "read charges", err)
		return billing.Usage{}, 0, false
	}
	return billing.Summarize(charges, from, to), days, true
}

// usagePage shows the USD usage (the figures of GET /usage) beside the
// compute units the application's jobs spent in the same window, by day
// and by person (the CU charges' ledger entries name who made the job).
func (c *Console) usagePage(w http.ResponseWriter, r *http.Request, req *request) {
	u, days, ok := c.usage(w, r, req)
	if !ok {
		return
	}
	from, to := billing.UsageWindow(c.Clock.Now(), days)
	charges, err := c.Ledger.UnitCharges(r.Context(), req.current.WorkspaceID, from, to)
	if err != nil {
		c.internalError(w, r, "read compute unit charges", err)
		return
	}
	c.show(w, r, http.StatusOK, c.view(req, "usage", "Usage"), pages.Usage(pages.UsageData{Days: days, Choices: UsageChoices, Usage: u,
		Units: billing.SummarizeUnits(charges, from, to), Chart: chart.Draw(u, chart.Wide), Compact: chart.Draw(u, chart.Compact)}))
}

// usageCSV is the table's rows as CSV: date, USD (six decimals, as
// GET /usage writes them), jobs.
func (c *Console) usageCSV(w http.ResponseWriter, r *http.Request, req *request) {
	u, days, ok := c.usage(w, r, req)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="usage-%s-%dd.csv"`, req.current.WorkspaceID, days))
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"date", "usd", "jobs"})
	for _, d := range u.Days {
		_ = cw.Write([]string{d.Date, d.Amount.String(), strconv.Itoa(d.Jobs)})
	}
	cw.Flush()
}
