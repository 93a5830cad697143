// Package jobview is how the console's jobs pages show a job
// (docs/console.md, "Jobs"): its details as GET /jobs/{id}/details gives
// them, its outputs as fresh presigned URLs told apart by kind, its cost
// in its own currency, and its request laid out for reading.
package jobview

import (
	"context"
	"encoding/json"
	"path"
	"strings"

	"genjobs/internal/billing"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/webhook"
)

// Store is what the jobs pages read: a page of the list, whole jobs by id
// (the poll route), and the job, request and webhook delivery GET /jobs/{id}/details and
// GET /jobs/{id}/deliveries read (store.Store, deliveriesdb.DB).
type Store interface {
	Job(ctx context.Context, id string) (*job.Job, error)
	// JobsPage: a page of the list, whole, in one Query and one
	// BatchGetItem (store.Store.JobsPage).
	JobsPage(ctx context.Context, workspaceID string, f job.Filter, cursor string, limit int) (job.Page, error)
	JobsByID(ctx context.Context, ids []string) ([]*job.Job, error)
	JobRequest(ctx context.Context, id string) (json.RawMessage, error)
	Delivery(ctx context.Context, jobID string) (*webhook.Delivery, error)
}

// PageSize is how many jobs a page of the list shows.
const PageSize = 50

// Output is one output file as the pages show it.
type Output struct {
	URL  string `json:"url"`
	Kind string `json:"kind"` // "image", "video" or "file" (a 3D model: a download)
	Ext  string `json:"ext"`  // the file's extension, for a download's label
}

// Kind tells an output by its key's extension (the worker names each
// output file with its format's).
func Kind(key string) string {
	switch strings.ToLower(strings.TrimPrefix(path.Ext(key), ".")) {
	case "png", "jpg", "jpeg", "webp", "gif":
		return "image"
	case "mp4", "webm", "mov":
		return "video"
	}
	return "file"
}

// Job is a job as the pages show it.
type Job struct {
	*job.Job
	Details httpapi.Details
	Outputs []Output
	Cost    string // the price in its currency: "$0.04", "120 CU"
	Charged string // what it was charged; "" until it ends
	Input   string // the request, indented; "" on the list
}

// Money writes an amount as the details give it, in currency c.
func Money(c billing.Currency, amount string) string {
	if c == billing.CurrencyCU {
		return amount + " CU"
	}
	m, err := billing.ParseUSD(amount)
	if err != nil {
		return amount + " USD"
	}
	return "$" + m.Dollars()
}

// Show is j as the pages show it, its outputs' URLs minted now by urls.
// request is its stored request, nil on the list (which shows no inputs).
func Show(ctx context.Context, urls httpapi.ResultURLs, j *job.Job, request json.RawMessage) (Job, error) {
	d, err := httpapi.JobDetails(j, request)
	if err != nil {
		return Job{}, err
	}
	v := Job{Job: j, Details: d, Cost: Money(d.Billing.Currency, d.Billing.Price)}
	if d.Billing.Charged != nil {
		v.Charged = Money(d.Billing.Currency, *d.Billing.Charged)
	}
	if request != nil {
		v.Input = indent(d.Input)
	}
	for _, key := range j.Outputs {
		u, err := urls.ResultURL(ctx, key)
		if err != nil {
			return Job{}, err
		}
		v.Outputs = append(v.Outputs, Output{URL: u, Kind: Kind(key), Ext: strings.TrimPrefix(path.Ext(key), ".")})
	}
	return v, nil
}

// indent is a JSON document laid out for reading.
func indent(doc json.RawMessage) string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return string(doc)
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(doc)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
