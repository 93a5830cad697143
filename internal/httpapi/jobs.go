package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"genjobs/internal/job"
	"genjobs/internal/webhook"
)

// JobReader reads jobs, and a job with its request (its own item, written
// by the creation) in one strongly consistent round trip
// (store.Store.JobWithRequest).
type JobReader interface {
	Job(ctx context.Context, id string) (*job.Job, error)
	ListJobs(ctx context.Context, workspaceID string, q job.Query) (job.Page, error)
	JobWithRequest(ctx context.Context, id string) (*job.Job, json.RawMessage, error)
}

// ResultURLs mints the fetchable URL of an output file (a presigned GET).
type ResultURLs interface {
	ResultURL(ctx context.Context, key string) (string, error)
}

// Canceller ends a job at the client's request (lifecycle.Ender).
type Canceller interface {
	Cancel(ctx context.Context, j *job.Job) (*job.Job, error)
}

// DeliveryReader reads a job's webhook delivery (store.Store).
type DeliveryReader interface {
	Delivery(ctx context.Context, jobID string) (*webhook.Delivery, error)
}

// Jobs serves GET /jobs/{id}, GET /jobs, DELETE /jobs/{id},
// GET /jobs/{id}/deliveries and GET /jobs/{id}/details.
type Jobs struct {
	Auth       Authenticator
	Jobs       JobReader
	Results    ResultURLs
	Cancel     Canceller
	Deliveries DeliveryReader
}

// Routes is the jobs function's router.
func (h *Jobs) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", h.get)
	mux.HandleFunc("DELETE /jobs/{id}", h.cancel)
	mux.HandleFunc("GET /jobs", h.list)
	mux.HandleFunc("GET /jobs/{id}/deliveries", h.deliveries)
	mux.HandleFunc("GET /jobs/{id}/details", h.details)
	mux.Handle("/", NotFound())
	return mux
}

// How own reads the job.
type jobRead int

const (
	readJob         jobRead = iota // its item
	readWithRequest                // its item and its request's, in one round trip
	readFresh                      // its item, never a read kept by WithOneJobRead
)

// own reads the caller's job named in the path (and, by how, its request),
// answering 404 itself.
func (h *Jobs) own(w http.ResponseWriter, r *http.Request, how jobRead) (*job.Job, json.RawMessage, bool) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return nil, nil, false
	}
	// Ids are issued in lower case; UUIDs compare case-insensitively.
	id := strings.ToLower(r.PathValue("id"))
	if !job.ValidID(id) {
		writeError(w, http.StatusNotFound, msgJobNotFound)
		return nil, nil, false
	}
	j, request, err := h.read(r.Context(), id, how)
	// Another workspace's job is answered exactly like a missing one.
	if errors.Is(err, job.ErrNotFound) || err == nil && j.WorkspaceID != p.WorkspaceID {
		writeError(w, http.StatusNotFound, msgJobNotFound)
		return nil, nil, false
	}
	if err != nil {
		internalError(w, r, "read job", err)
		return nil, nil, false
	}
	return j, request, true
}

type oneJobReadKey struct{}

// oneJobRead is the read of a job kept under a context (WithOneJobRead).
type oneJobRead struct {
	mu      sync.Mutex
	id      string
	j       *job.Job
	request json.RawMessage
}

// WithOneJobRead returns a context under which the jobs routes that read a
// job (GET /jobs/{id}, /details, /deliveries) read it once: the first
// reads the job with its request in one round trip, and the requests that
// follow under the same context, in process, answer from that read. The
// MCP tool get_job answers a job's record and its details, two requests
// of one job, with one read. DELETE /jobs/{id} always reads afresh.
func WithOneJobRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, oneJobReadKey{}, &oneJobRead{})
}

// read reads the job id as how says, or answers the read kept under ctx.
func (h *Jobs) read(ctx context.Context, id string, how jobRead) (*job.Job, json.RawMessage, error) {
	kept, _ := ctx.Value(oneJobReadKey{}).(*oneJobRead)
	switch {
	case kept != nil && how != readFresh:
	case how == readWithRequest:
		return h.Jobs.JobWithRequest(ctx, id)
	default:
		j, err := h.Jobs.Job(ctx, id)
		return j, nil, err
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if kept.j != nil && kept.id == id {
		return kept.j, kept.request, nil
	}
	j, request, err := h.Jobs.JobWithRequest(ctx, id)
	if err == nil {
		kept.id, kept.j, kept.request = id, j, request
	}
	return j, request, err
}

func (h *Jobs) get(w http.ResponseWriter, r *http.Request) {
	j, _, ok := h.own(w, r, readJob)
	if !ok {
		return
	}
	rec, err := Record(r.Context(), h.Results, j)
	if err != nil {
		internalError(w, r, "mint result URLs", err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (h *Jobs) cancel(w http.ResponseWriter, r *http.Request) {
	j, _, ok := h.own(w, r, readFresh)
	if !ok {
		return
	}
	ended, err := h.Cancel.Cancel(r.Context(), j)
	if errors.Is(err, job.ErrConflict) && ended != nil {
		writeError(w, http.StatusConflict, "The job has already ended; its status is "+string(ended.Status)+".")
		return
	}
	if err != nil {
		internalError(w, r, "cancel job", err)
		return
	}
	logger(r.Context()).Info("job cancelled", "job_id", j.ID, "workspace_id", j.WorkspaceID)
	rec, err := Record(r.Context(), h.Results, ended)
	if err != nil {
		internalError(w, r, "mint result URLs", err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// deliveryAttempt is one webhook attempt as GET /jobs/{id}/deliveries
// shows it: every field present, null when it does not apply.
type deliveryAttempt struct {
	Attempt    int       `json:"attempt"`
	At         job.Time  `json:"at"` // the attempt's start
	DurationMS *int64    `json:"duration_ms"`
	StatusCode *int      `json:"status_code"`
	Error      *string   `json:"error"`
	NextAt     *job.Time `json:"next_attempt_at"`
}

// deliveries lists the webhook attempts of one of the caller's jobs, oldest
// first: none before the job ends, or when it has no webhook.
func (h *Jobs) deliveries(w http.ResponseWriter, r *http.Request) {
	j, _, ok := h.own(w, r, readJob)
	if !ok {
		return
	}
	items := []deliveryAttempt{}
	d, err := h.Deliveries.Delivery(r.Context(), j.ID)
	if err != nil && !errors.Is(err, webhook.ErrNotFound) {
		internalError(w, r, "read deliveries", err)
		return
	}
	if d != nil {
		for _, a := range d.Attempts {
			item := deliveryAttempt{Attempt: a.Number, At: job.TimeOf(a.At)}
			if !a.EndedAt.IsZero() {
				ms := max(a.EndedAt.Sub(a.At).Milliseconds(), 0)
				item.DurationMS = &ms
			}
			if a.StatusCode != 0 {
				item.StatusCode = &a.StatusCode
			}
			if a.Error != "" {
				item.Error = &a.Error
			}
			if a.NextAt != nil {
				next := job.TimeOf(*a.NextAt)
				item.NextAt = &next
			}
			items = append(items, item)
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Items []deliveryAttempt `json:"items"`
	}{items})
}

// Record is the client's view of j, its outputs as URLs minted by urls now,
// so that they are always fresh (docs/api.md, "The job record").
func Record(ctx context.Context, urls ResultURLs, j *job.Job) (job.Record, error) {
	var out []string
	for _, key := range j.Outputs {
		u, err := urls.ResultURL(ctx, key)
		if err != nil {
			return job.Record{}, err
		}
		out = append(out, u)
	}
	return j.Record(out), nil
}

// RecordBody is the bytes GET /jobs/{id} answers for j now: a webhook
// sends exactly these, and signs them.
func RecordBody(ctx context.Context, urls ResultURLs, j *job.Job) ([]byte, error) {
	rec, err := Record(ctx, urls, j)
	if err != nil {
		return nil, err
	}
	return encode(rec)
}

type jobList struct {
	Items      []job.Record `json:"items"`
	NextCursor *string      `json:"next_cursor"`
}

func (h *Jobs) list(w http.ResponseWriter, r *http.Request) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return
	}
	q, err := parseJobQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, invalidQueryPrefix+err.Error())
		return
	}
	page, err := h.Jobs.ListJobs(r.Context(), p.WorkspaceID, q)
	if errors.Is(err, job.ErrBadCursor) {
		writeError(w, http.StatusBadRequest, invalidQueryPrefix+"cursor is not valid for this workspace and query")
		return
	}
	if err != nil {
		internalError(w, r, "list jobs", err)
		return
	}
	out := jobList{Items: make([]job.Record, 0, len(page.Jobs))}
	for _, j := range page.Jobs {
		rec, err := Record(r.Context(), h.Results, j)
		if err != nil {
			internalError(w, r, "mint result URLs", err)
			return
		}
		out.Items = append(out.Items, rec)
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, out)
}

// maxCursorLength refuses absurd cursors before any decoding.
const maxCursorLength = 512

// knownParams refuses unknown and repeated query parameters, naming the
// first by name so that the answer is the same on every call.
func knownParams(values url.Values, known ...string) error {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case !slices.Contains(known, name):
			return errors.New(name + " is not a known query parameter")
		case len(values[name]) > 1:
			return errors.New(name + " is given more than once")
		}
	}
	return nil
}

func parseJobQuery(r *http.Request) (job.Query, error) {
	q := job.Query{Limit: job.DefaultListLimit}
	values := r.URL.Query()
	if err := knownParams(values, "limit", "cursor", "status"); err != nil {
		return q, err
	}
	if v, ok := values["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > job.MaxListLimit {
			return q, errors.New("limit must be an integer between 1 and 1000")
		}
		q.Limit = n
	}
	if v, ok := values["status"]; ok {
		st, known := job.ParseStatus(v[0])
		if !known {
			names := make([]string, len(job.Statuses))
			for i, s := range job.Statuses {
				names[i] = string(s)
			}
			return q, errors.New("status must be one of " + strings.Join(names, ", "))
		}
		q.Status = st
	}
	if v, ok := values["cursor"]; ok {
		if v[0] == "" || len(v[0]) > maxCursorLength {
			return q, errors.New("cursor is not valid for this workspace and query")
		}
		q.Cursor = v[0]
	}
	return q, nil
}
