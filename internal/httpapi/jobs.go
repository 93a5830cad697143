package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"genjobs/internal/job"
)

// JobReader reads jobs.
type JobReader interface {
	Job(ctx context.Context, id string) (*job.Job, error)
	ListJobs(ctx context.Context, workspaceID string, q job.Query) (job.Page, error)
}

// Jobs serves GET /jobs/{id} and GET /jobs.
type Jobs struct {
	Auth Authenticator
	Jobs JobReader
}

// Routes is the jobs function's router.
func (h *Jobs) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", h.get)
	mux.HandleFunc("GET /jobs", h.list)
	mux.Handle("/", NotFound())
	return mux
}

func (h *Jobs) get(w http.ResponseWriter, r *http.Request) {
	p, ok := authenticate(h.Auth, w, r)
	if !ok {
		return
	}
	// Ids are issued in lower case; UUIDs compare case-insensitively.
	id := strings.ToLower(r.PathValue("id"))
	if !job.ValidID(id) {
		writeError(w, http.StatusNotFound, msgJobNotFound)
		return
	}
	j, err := h.Jobs.Job(r.Context(), id)
	// Another workspace's job is answered exactly like a missing one.
	if errors.Is(err, job.ErrNotFound) || err == nil && j.WorkspaceID != p.WorkspaceID {
		writeError(w, http.StatusNotFound, msgJobNotFound)
		return
	}
	if err != nil {
		internalError(w, r, "read job", err)
		return
	}
	writeJSON(w, http.StatusOK, j.Record())
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
		out.Items = append(out.Items, j.Record())
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, out)
}

// maxCursorLength refuses absurd cursors before any decoding.
const maxCursorLength = 512

func parseJobQuery(r *http.Request) (job.Query, error) {
	q := job.Query{Limit: job.DefaultListLimit}
	values := r.URL.Query()
	for name, vs := range values {
		switch name {
		case "limit", "cursor", "status":
			if len(vs) > 1 {
				return q, errors.New(name + " is given more than once")
			}
		default:
			return q, errors.New(name + " is not a known query parameter")
		}
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
