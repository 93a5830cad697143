package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"genjobs/internal/billing"
	"genjobs/internal/job"
)

// Details is what GET /jobs/{id}/details answers (docs/api.md, "Job
// details"): what a job was asked, by whom and where, and what it costs.
// The job record itself keeps to its own fields.
type Details struct {
	JobID     string          `json:"job_id"`
	Endpoint  string          `json:"endpoint"`
	Input     json.RawMessage `json:"input"`
	Source    string          `json:"source"`
	CreatedBy *string         `json:"created_by"`
	Billing   DetailsBilling  `json:"billing"`
	StartedAt *job.Time       `json:"started_at"`
	EndedAt   *job.Time       `json:"ended_at"`
	Route     string          `json:"route"`
}

// DetailsBilling is a job's price in the one currency it is billed in.
type DetailsBilling struct {
	Currency billing.Currency `json:"currency"`
	Price    string           `json:"price"`
	// Charged is null until the job ends, its price once completed, "0"
	// once failed or cancelled.
	Charged *string `json:"charged"`
}

// MaxShownDataURI is how much of an image's data URI the details show.
const MaxShownDataURI = 64

// JobDetails is the details of j, whose stored request is request.
func JobDetails(j *job.Job, request json.RawMessage) (Details, error) {
	input, err := shortenDataURIs(request)
	if err != nil {
		return Details{}, err
	}
	d := Details{
		JobID: j.ID, Endpoint: j.Endpoint, Input: input,
		Source: j.Source, Route: "reference",
		Billing: DetailsBilling{Currency: billing.CurrencyUSD, Price: j.Price.String()},
	}
	if d.Source == "" { // a job stored before sources were recorded
		d.Source = job.SourceAPI
	}
	if j.CreatedBy != "" {
		d.CreatedBy = &j.CreatedBy
	}
	if j.InUnits() {
		d.Billing = DetailsBilling{Currency: billing.CurrencyCU, Price: j.Units.String()}
	}
	switch j.Status {
	case job.Completed:
		d.Billing.Charged = &d.Billing.Price
	case job.Failed, job.Cancelled:
		zero := "0"
		d.Billing.Charged = &zero
	}
	if j.StartedAt != nil {
		t := job.TimeOf(*j.StartedAt)
		d.StartedAt = &t
	}
	if j.CompletedAt != nil {
		t := job.TimeOf(*j.CompletedAt)
		d.EndedAt = &t
	}
	if j.Provider != "" {
		d.Route = j.Provider
		if j.RouteModel != "" {
			d.Route += ":" + j.RouteModel
		}
	}
	return d, nil
}

// shortenDataURIs rewrites every string of the request that is a data URI
// to its first MaxShownDataURI characters: an inline image is up to 64 KiB
// of base64 that says nothing to a reader.
func shortenDataURIs(request json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(request)) == 0 {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(request))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			if strings.HasPrefix(v, "data:") && len(v) > MaxShownDataURI {
				return v[:MaxShownDataURI]
			}
		case map[string]any:
			for k, x := range v {
				v[k] = walk(x)
			}
		case []any:
			for i, x := range v {
				v[i] = walk(x)
			}
		}
		return v
	}
	return marshalPlain(walk(v))
}

// marshalPlain is json.Marshal without HTML escaping (prompts keep their
// '<' and '&').
func marshalPlain(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// details answers one of the caller's jobs' details: the job's item and
// its request's item, one strongly consistent read, nothing written.
func (h *Jobs) details(w http.ResponseWriter, r *http.Request) {
	j, request, ok := h.own(w, r, readWithRequest)
	if !ok {
		return
	}
	d, err := JobDetails(j, request)
	if err != nil {
		internalError(w, r, "decode the job's request", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
