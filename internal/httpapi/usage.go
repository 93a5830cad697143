package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/clock"
	"genjobs/internal/job"
)

// ChargeReader reads a workspace's charges from the ledger (store.Store).
type ChargeReader interface {
	Charges(ctx context.Context, ws string, from, to time.Time) ([]billing.Entry, error)
}

// Usage serves GET /usage: what the workspace was billed, by day and model.
type Usage struct {
	Auth   Authenticator
	Ledger ChargeReader
	Clock  clock.Clock
}

// Routes is the usage function's router.
func (h *Usage) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /usage", h.get)
	mux.Handle("/", NotFound())
	return mux
}

type usageBody struct {
	From    job.Time     `json:"from"`
	To      job.Time     `json:"to"`
	Total   string       `json:"total_usd"`
	ByDay   []usageDay   `json:"by_day"`
	ByModel []usageModel `json:"by_model"`
}

type usageDay struct {
	Date string `json:"date"`
	USD  string `json:"usd"`
	Jobs int    `json:"jobs"`
}

type usageModel struct {
	Path string `json:"path"`
	USD  string `json:"usd"`
	Jobs int    `json:"jobs"`
}

func (h *Usage) get(w http.ResponseWriter, r *http.Request) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return
	}
	days, err := parseUsageQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, invalidQueryPrefix+err.Error())
		return
	}
	from, to := billing.UsageWindow(h.Clock.Now(), days)
	charges, err := h.Ledger.Charges(r.Context(), p.WorkspaceID, from, to)
	if err != nil {
		internalError(w, r, "read charges", err)
		return
	}
	u := billing.Summarize(charges, from, to)
	body := usageBody{
		From: job.TimeOf(u.From), To: job.TimeOf(u.To), Total: u.Total.String(),
		ByDay: make([]usageDay, len(u.Days)), ByModel: make([]usageModel, len(u.Models)),
	}
	for i, d := range u.Days {
		body.ByDay[i] = usageDay{Date: d.Date, USD: d.Amount.String(), Jobs: d.Jobs}
	}
	for i, m := range u.Models {
		body.ByModel[i] = usageModel{Path: m.Path, USD: m.Amount.String(), Jobs: m.Jobs}
	}
	writeJSON(w, http.StatusOK, body)
}

func parseUsageQuery(r *http.Request) (int, error) {
	values := r.URL.Query()
	if err := knownParams(values, "days"); err != nil {
		return 0, err
	}
	v, ok := values["days"]
	if !ok {
		return billing.DefaultUsageDays, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 1 || n > billing.MaxUsageDays {
		return 0, errors.New("days must be an integer between 1 and 90")
	}
	return n, nil
}
