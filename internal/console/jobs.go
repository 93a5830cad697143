package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"genjobs/internal/console/jobview"
	"genjobs/internal/job"
	"genjobs/internal/webhook"
)

type jobsData struct {
	Jobs     []jobview.Job
	Status   job.Status
	Statuses []job.Status
	Next     string // the next page's URL, "" on the last
}

const badCursor = "This page link of the jobs list is not valid for this workspace and filter. Open the list again from its first page."

// jobsPage lists the workspace's jobs, newest first, a page at a time:
// GET /jobs's list, each job then read whole in one batch.
func (c *Console) jobsPage(w http.ResponseWriter, r *http.Request, req *request) {
	q := job.Query{Limit: jobview.PageSize}
	values := r.URL.Query()
	if v := values.Get("status"); v != "" {
		st, known := job.ParseStatus(v)
		if !known {
			c.fail(w, r, http.StatusBadRequest, "There is no job status "+v+".")
			return
		}
		q.Status = st
	}
	if v, ok := values["cursor"]; ok {
		if v[0] == "" || len(v[0]) > 512 {
			c.fail(w, r, http.StatusBadRequest, badCursor)
			return
		}
		q.Cursor = v[0]
	}
	page, err := c.Store.ListJobs(r.Context(), req.current.WorkspaceID, q)
	if errors.Is(err, job.ErrBadCursor) {
		c.fail(w, r, http.StatusBadRequest, badCursor)
		return
	}
	var jobs []*job.Job
	if err == nil && len(page.Jobs) > 0 {
		jobs, err = jobview.Whole(r.Context(), c.Store, page.Jobs)
	}
	if err != nil {
		c.internalError(w, r, "list jobs", err)
		return
	}
	data := jobsData{Status: q.Status, Statuses: job.Statuses}
	for _, j := range jobs {
		v, err := jobview.Show(r.Context(), c.Results, j, nil)
		if err != nil {
			c.internalError(w, r, "show a job", err)
			return
		}
		data.Jobs = append(data.Jobs, v)
	}
	if page.NextCursor != "" {
		next := url.Values{"cursor": {page.NextCursor}}
		if q.Status != "" {
			next.Set("status", string(q.Status))
		}
		data.Next = Base + "/jobs?" + next.Encode()
	}
	v := c.view(req, "jobs", "Jobs")
	v.Data = data
	c.render(w, r, http.StatusOK, "jobs", v)
}

type jobData struct {
	jobview.Job
	Deliveries []webhook.Attempt
}

// jobPage shows one of the workspace's jobs: what GET /jobs/{id}/details
// and GET /jobs/{id}/deliveries read. Another workspace's job is the same
// 404 page as a missing one.
func (c *Console) jobPage(w http.ResponseWriter, r *http.Request, req *request) {
	id := strings.ToLower(r.PathValue("id"))
	if !job.ValidID(id) {
		c.notFound(w, r)
		return
	}
	j, err := c.Store.Job(r.Context(), id)
	if errors.Is(err, job.ErrNotFound) || err == nil && j.WorkspaceID != req.current.WorkspaceID {
		c.notFound(w, r)
		return
	}
	var data jobData
	if err == nil {
		data.Job, err = c.showJob(r, j)
	}
	var d *webhook.Delivery
	if err == nil {
		if d, err = c.Store.Delivery(r.Context(), j.ID); errors.Is(err, webhook.ErrNotFound) {
			err = nil
		}
	}
	if err != nil {
		c.internalError(w, r, "show a job", err)
		return
	}
	if d != nil {
		data.Deliveries = d.Attempts
	}
	v := c.view(req, "jobs", "Job "+j.ID)
	v.Data = data
	c.render(w, r, http.StatusOK, "job", v)
}

func (c *Console) showJob(r *http.Request, j *job.Job) (jobview.Job, error) {
	request, err := c.Store.JobRequest(r.Context(), j.ID)
	if err != nil {
		return jobview.Job{}, err
	}
	return jobview.Show(r.Context(), c.Results, j, request)
}
