package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"

	"genjobs/client"
	"genjobs/internal/billing/prices"
	"genjobs/internal/catalog"
	"genjobs/internal/catalog/form"
)

// detailsAtOnce bounds the details a table reads at the same time.
const detailsAtOnce = 8

// jobRow is a job as the table of jobs list shows it: its record and,
// read from GET /jobs/{id}/details, its endpoint and cost.
type jobRow struct {
	job     *client.Job
	details *client.Details
}

// withDetails reads the details of each job, a few at a time.
func withDetails(ctx context.Context, cl *client.Client, jobs []*client.Job) ([]jobRow, error) {
	rows := make([]jobRow, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, detailsAtOnce)
	var wg sync.WaitGroup
	for i, j := range jobs {
		rows[i].job = j
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rows[i].details, errs[i] = cl.Jobs.Details(ctx, j.ID)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// printJobTable writes rows under a header: id, status, endpoint, created,
// cost.
func printJobTable(w io.Writer, rows []jobRow, header bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "ID\tSTATUS\tENDPOINT\tCREATED\tCOST")
	}
	for _, r := range rows {
		status := string(r.job.Status)
		if r.job.Progress != nil && !r.job.Status.Terminal() {
			status += fmt.Sprintf(" %.0f%%", *r.job.Progress*100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.job.ID, status, strings.TrimPrefix(r.details.Endpoint, "/generate/"),
			r.job.CreatedAt.Local().Format("2006-01-02 15:04:05"), cost(r.details.Billing))
	}
	tw.Flush()
}

// cost is a job's cost in its currency: what was charged once it ended,
// what is held while it runs.
func cost(b client.Billing) string {
	unit := " USD"
	if b.Currency == "cu" {
		unit = " CU"
	}
	switch {
	case b.Charged == nil:
		return trimAmount(b.Price) + unit + " held"
	default:
		return trimAmount(*b.Charged) + unit
	}
}

// trimAmount drops a decimal amount's trailing zeros: 0.030000 -> 0.03.
func trimAmount(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func (c *cli) jobsShow(ctx context.Context, _ *flag.FlagSet, args []string) error {
	id, cl, err := c.clientFor(args, "job id")
	if err != nil {
		return err
	}
	d, err := cl.Jobs.Details(ctx, id)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	human := func(w io.Writer) {}
	if c.stdoutTTY && !c.asJSON {
		j, err := cl.Jobs.Get(ctx, id)
		if err != nil {
			return err
		}
		human = func(w io.Writer) { humanDetails(w, j, d) }
	}
	c.print(raw, human)
	return nil
}

func humanDetails(w io.Writer, j *client.Job, d *client.Details) {
	by := "unknown"
	if d.CreatedBy != nil {
		by = *d.CreatedBy
	}
	fmt.Fprintf(w, "%s  %s\n", j.ID, j.Status)
	fmt.Fprintf(w, "  endpoint  %s\n", d.Endpoint)
	fmt.Fprintf(w, "  source    %s, by %s\n", d.Source, by)
	fmt.Fprintf(w, "  cost      %s\n", cost(d.Billing))
	fmt.Fprintf(w, "  created   %s\n", j.CreatedAt.Local().Format("2006-01-02 15:04:05"))
	if d.StartedAt != nil {
		fmt.Fprintf(w, "  started   %s\n", d.StartedAt.Local().Format("2006-01-02 15:04:05"))
	}
	if d.EndedAt != nil {
		fmt.Fprintf(w, "  ended     %s\n", d.EndedAt.Local().Format("2006-01-02 15:04:05"))
	}
	fmt.Fprintf(w, "  route     %s\n", d.Route)
	if j.Error != nil {
		fmt.Fprintf(w, "  error     %s: %s\n", j.Error.Code, j.Error.Message)
	}
	var input bytes.Buffer
	if json.Indent(&input, d.Input, "    ", "  ") == nil {
		fmt.Fprintf(w, "  input\n    %s\n", input.String())
	}
	if j.Result != nil {
		for _, u := range j.Result.URLs {
			fmt.Fprintf(w, "  %s\n", u)
		}
	}
}

// modelField is one request field as genjobs models shows it: the
// playground's and the models page's description of it (package form),
// from the endpoint's JSON Schema.
type modelField struct {
	Name        string       `json:"name"`
	Type        string       `json:"type"`
	Format      string       `json:"format,omitempty"`
	Required    bool         `json:"required"`
	Minimum     *json.Number `json:"minimum,omitempty"`
	Maximum     *json.Number `json:"maximum,omitempty"`
	MaxItems    *int         `json:"max_items,omitempty"`
	Enum        []string     `json:"enum,omitempty"`
	Default     any          `json:"default,omitempty"`
	Description string       `json:"description"`

	bounds, typeText string
}

type modelInfo struct {
	Path     string       `json:"path"`
	Summary  string       `json:"summary"`
	Price    string       `json:"price"`
	CUPerUSD int64        `json:"compute_units_per_usd"`
	Takes    string       `json:"takes"`
	Fields   []modelField `json:"fields"`
}

// models reads the endpoints from the catalog's JSON Schemas and their
// price rules from the price list: the very files that validate and price
// the API's requests.
func models() ([]modelInfo, error) {
	cat, err := catalog.New()
	if err != nil {
		return nil, err
	}
	list, err := prices.Load(nil)
	if err != nil {
		return nil, err
	}
	perUSD, err := list.UnitsPerUSD()
	if err != nil {
		return nil, err
	}
	var out []modelInfo
	for _, e := range cat.Endpoints() {
		rule, err := list.Describe(e.Path())
		if err != nil {
			return nil, err
		}
		fields, err := form.Fields(e)
		if err != nil {
			return nil, err
		}
		m := modelInfo{Path: e.Path(), Summary: e.Summary, Price: rule, CUPerUSD: perUSD, Takes: e.Takes, Fields: []modelField{}}
		for _, f := range fields {
			var def any
			if f.Default != nil {
				def = f.Default
			}
			m.Fields = append(m.Fields, modelField{Name: f.Name, Type: f.Type, Format: f.Format, Required: f.Required,
				Minimum: f.Minimum, Maximum: f.Maximum, MaxItems: f.MaxItems, Enum: f.Enum, Default: def,
				Description: f.Description, bounds: f.Bounds(), typeText: f.TypeText()})
		}
		out = append(out, m)
	}
	return out, nil
}

func (c *cli) models(_ context.Context, _ *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	ms, err := models()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(map[string]any{"models": ms})
	if err != nil {
		return err
	}
	c.print(raw, func(w io.Writer) {
		for i, m := range ms {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s  %s\n", strings.TrimPrefix(m.Path, "/generate/"), m.Summary)
			fmt.Fprintf(w, "  price: %s (in the application: ceil(USD x %d) compute units)\n", m.Price, m.CUPerUSD)
			fmt.Fprintf(w, "  takes: %s\n", m.Takes)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  FIELD\tTYPE\tBOUNDS\tDEFAULT")
			for _, f := range m.Fields {
				name := f.Name
				if f.Required {
					name += " (required)"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, f.typeText, f.bounds, shown(f.Default))
			}
			tw.Flush()
		}
	})
	return nil
}

func shown(v any) string {
	if v == nil {
		return "-"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
