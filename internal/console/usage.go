package console

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"

	"genjobs/internal/billing"
	"genjobs/internal/console/chart"
)

// UsageChoices are the windows the usage page offers, in days.
var UsageChoices = []int{7, 30, 90}

type usageData struct {
	Days    int
	Choices []int
	Usage   billing.Usage
	// Chart is drawn for a wide screen, Compact for a phone (the
	// stylesheet shows one): a phone shrinks a wide chart's text below
	// reading size and crowds its labels.
	Chart, Compact chart.Chart
}

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
	charges, err := c.Store.Charges(r.Context(), req.current.WorkspaceID, from, to)
	if err != nil {
		c.internalError(w, r, "read charges", err)
		return billing.Usage{}, 0, false
	}
	return billing.Summarize(charges, from, to), days, true
}

func (c *Console) usagePage(w http.ResponseWriter, r *http.Request, req *request) {
	u, days, ok := c.usage(w, r, req)
	if !ok {
		return
	}
	v := c.view(req, "usage", "Usage")
	v.Data = usageData{Days: days, Choices: UsageChoices, Usage: u, Chart: chart.Draw(u, chart.Wide), Compact: chart.Draw(u, chart.Compact)}
	c.render(w, r, http.StatusOK, "usage", v)
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
