package jobview

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/webhook"
)

// Sources are the values of the source filter.
var Sources = []string{job.SourceAPI, job.SourceMCP, job.SourceApp}

// personID is what a person filter may hold: a user id (Cognito's sub),
// 1 to 128 of A-Z, a-z, 0-9, _ and -.
func personID(s string) bool {
	return within(s, 128, func(c byte) bool { return lowerDigitDash(c) || 'A' <= c && c <= 'Z' || c == '_' })
}

// endpointPath is what an endpoint filter may hold: an endpoint's path,
// /generate/{kind}/{vendor}/{model}, each 1 to 64 of a-z, 0-9 and - (and
// . in the model). Checked without a regular expression: one with those
// bounded repetitions took half a millisecond of the console's every
// cold start to compile.
func endpointPath(s string) bool {
	rest, ok := strings.CutPrefix(s, "/generate/")
	parts := strings.Split(rest, "/")
	return ok && len(parts) == 3 && within(parts[0], 64, lowerDigitDash) && within(parts[1], 64, lowerDigitDash) &&
		within(parts[2], 64, func(c byte) bool { return lowerDigitDash(c) || c == '.' })
}

// within reports whether s has 1 to n bytes, each one allowed.
func within(s string, n int, allowed func(byte) bool) bool {
	if len(s) == 0 || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !allowed(s[i]) {
			return false
		}
	}
	return true
}

func lowerDigitDash(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' }

// ParseFilter reads the list's filters from a query. A value that does not
// parse gives the message a 400 page says.
func ParseFilter(values url.Values) (job.Filter, string) {
	var f job.Filter
	if v := values.Get("status"); v != "" {
		st, known := job.ParseStatus(v)
		if !known {
			return f, "There is no job status " + v + "."
		}
		f.Status = st
	}
	if v := values.Get("endpoint"); v != "" {
		if !endpointPath(v) {
			return f, "There is no endpoint " + v + ": an endpoint is a path such as /generate/image/vendor-b/model-e-4."
		}
		f.Endpoint = v
	}
	if v := values.Get("source"); v != "" {
		if !slices.Contains(Sources, v) {
			return f, "There is no job source " + v + ": the sources are api, mcp and app."
		}
		f.Source = v
	}
	if v := values.Get("person"); v != "" {
		if !personID(v) {
			return f, "The person filter is not a person's id. Choose a person from the list."
		}
		f.Person = v
	}
	return f, ""
}

// Query is f as a query string's values.
func Query(f job.Filter) url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"status": string(f.Status), "endpoint": f.Endpoint, "source": f.Source, "person": f.Person} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

// ListRow is a job as a list row shows it.
type ListRow struct {
	Job
	Row
}

// Person is a person the person filter offers.
type Person struct{ ID, Email string }

// List is a page of the jobs list as the page shows it.
type List struct {
	Jobs      []ListRow
	Filter    job.Filter
	Filtered  bool
	Statuses  []job.Status
	Endpoints []string // those of the page's jobs, for the endpoint filter
	Sources   []string
	People    []Person // who made the page's jobs, for the person filter
	Next      string   // the next page's URL, "" on the last
	Running   bool     // a job of the page runs: the script polls
	Script    string   // the jobs script's URL
}

// ListOf lays page out for the list at base (the list's path), its
// outputs' URLs minted by urls. The endpoint and person filters offer the
// page's jobs' endpoints and people (reading every endpoint or person
// would be a third read, or link the catalog), and the current filter's.
func ListOf(ctx context.Context, urls httpapi.ResultURLs, page job.Page, f job.Filter, base string, now time.Time) (List, error) {
	l := List{Filter: f, Filtered: f != job.Filter{}, Statuses: job.Statuses, Sources: Sources}
	if f.Endpoint != "" {
		l.Endpoints = append(l.Endpoints, f.Endpoint)
	}
	seen := map[string]bool{}
	if f.Person != "" {
		l.People = append(l.People, Person{ID: f.Person, Email: f.Person})
		seen[f.Person] = true
	}
	for _, j := range page.Jobs {
		v, err := Show(ctx, urls, j, nil)
		if err != nil {
			return List{}, err
		}
		r := ListRow{Job: v, Row: RowOf(v, now)}
		l.Running = l.Running || r.Running
		if j.Endpoint != "" && !slices.Contains(l.Endpoints, j.Endpoint) {
			l.Endpoints = append(l.Endpoints, j.Endpoint)
		}
		l.Jobs = append(l.Jobs, r)
		switch {
		case j.PersonID == "":
		case j.PersonID == f.Person:
			l.People[0].Email = j.CreatedBy
		case !seen[j.PersonID]:
			seen[j.PersonID] = true
			l.People = append(l.People, Person{ID: j.PersonID, Email: j.CreatedBy})
		}
	}
	slices.Sort(l.Endpoints)
	if page.NextCursor != "" {
		next := Query(f)
		next.Set("cursor", page.NextCursor)
		l.Next = base + "?" + next.Encode()
	}
	return l, nil
}

// MaxPoll is how many jobs one poll names: a page's.
const MaxPoll = PageSize

// PollIDs reads the poll route's ids=ID,ID,...: 1 to MaxPoll job ids,
// in lower case, without repeats; or the message of a 400.
func PollIDs(text string) ([]string, string) {
	ids := strings.Split(text, ",")
	if len(ids) > MaxPoll || len(ids) == 1 && ids[0] == "" {
		return nil, "Name 1 to 50 jobs: ids=ID,ID,..."
	}
	for i, id := range ids {
		ids[i] = strings.ToLower(id)
		if !job.ValidID(ids[i]) {
			return nil, "There is no job " + id + "."
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), ""
}

// Polled is one job as the poll route answers it: what its row shows,
// and what its page fills in once it ends.
type Polled struct {
	ID       string     `json:"id"`
	Status   job.Status `json:"status"`
	State    string     `json:"state"`
	Running  bool       `json:"running"`
	Duration string     `json:"duration"`
	Cost     string     `json:"cost"`
	Preview  *Output    `json:"preview"`
	Outputs  []Output   `json:"outputs"`
	Charged  string     `json:"charged"`
}

// Poll is the poll route's answer for jobs, those of workspace ws only:
// another workspace's job is left out as an id that names no job.
func Poll(ctx context.Context, urls httpapi.ResultURLs, jobs []*job.Job, ws string, now time.Time) ([]Polled, error) {
	out := []Polled{}
	for _, j := range jobs {
		if j.WorkspaceID != ws {
			continue
		}
		v, err := Show(ctx, urls, j, nil)
		if err != nil {
			return nil, err
		}
		r := RowOf(v, now)
		out = append(out, Polled{ID: j.ID, Status: j.Status, State: r.State, Running: r.Running,
			Duration: r.Duration, Cost: r.Shown, Preview: r.Preview, Outputs: v.Outputs, Charged: v.Charged})
	}
	return out, nil
}

// Page is one job as its page shows it.
type Page struct {
	Job
	Row
	History    []Event
	Inputs     []Input
	Deliveries []webhook.Attempt
	Delivery   *webhook.Delivery
	Manages    bool // an owner or admin: the route and "Deliver again"
	Script     string
}

// PageOf is j's page: its request's details and input images (the fields
// of ep, its endpoint, that hold images), its row at now, its history and its delivery (nil without one). Without
// manages (a member) the route is left out.
func PageOf(ctx context.Context, urls httpapi.ResultURLs, assets AssetURLs, ep *catalog.Endpoint, j *job.Job, request []byte, d *webhook.Delivery, manages bool, now time.Time) (Page, error) {
	p := Page{Manages: manages, History: History(j), Delivery: d}
	var err error
	if p.Job, err = Show(ctx, urls, j, request); err != nil {
		return Page{}, err
	}
	if p.Inputs, err = Inputs(ctx, assets, ep, j, request); err != nil {
		return Page{}, err
	}
	p.Row = RowOf(p.Job, now)
	if d != nil {
		p.Deliveries = d.Attempts
	}
	if !manages {
		p.Details.Route = ""
	}
	return p, nil
}

// ServePoll answers the poll route, GET {app}/jobs/poll?ids=ID,ID,...,
// for workspace ws: the jobs it names, read in one BatchGetItem, as JSON;
// a 400 naming what is wrong with ids; a 500 (logged) when the read fails.
func ServePoll(w http.ResponseWriter, r *http.Request, st Store, urls httpapi.ResultURLs, ws string, now time.Time, log *slog.Logger) {
	answer := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	ids, problem := PollIDs(r.URL.Query().Get("ids"))
	if problem != "" {
		answer(http.StatusBadRequest, map[string]string{"error": problem})
		return
	}
	jobs, err := st.JobsByID(r.Context(), ids)
	var out struct {
		Jobs []Polled `json:"jobs"`
	}
	if err == nil {
		out.Jobs, err = Poll(r.Context(), urls, jobs, ws, now)
	}
	if err != nil {
		log.Error("poll jobs", "error", err.Error())
		answer(http.StatusInternalServerError, map[string]string{"error": "Something went wrong on our side."})
		return
	}
	answer(http.StatusOK, out)
}

// Notices are the job page's confirmations after its forms (?done=...).
var Notices = map[string]string{
	"cancelled":  "Job cancelled. Nothing is charged for it.",
	"redelivery": "The webhook is being sent again.",
}

// AgainRefused is what the job page says (a 409) when "Deliver again"
// finds nothing to send (webhook.SendAgain's err); "" when err is none of
// those.
func AgainRefused(err error) string {
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return "This job has no webhook delivery to send again: it has no webhook, or has not ended yet."
	case errors.Is(err, webhook.ErrDelivered):
		return "This job's webhook was delivered; there is nothing to send again."
	case errors.Is(err, webhook.ErrClaimed):
		return "An attempt of this webhook is being made right now. Open the job again in a minute."
	}
	return ""
}
