package console

import (
	"errors"
	"net/http"
	"strings"

	"genjobs/internal/auth"
	"genjobs/internal/console/jobview"
	"genjobs/internal/console/pages"
	"genjobs/internal/job"
	"genjobs/internal/webhook"
)

const badCursor = "This page link of the jobs list is not valid for this workspace and filter. Open the list again from its first page."

// jobsPage lists the workspace's jobs that pass the filters, newest first,
// a page at a time: one Query of the index that serves the filters and
// one BatchGetItem of the page's jobs (store.Store.JobsPage).
func (c *Console) jobsPage(w http.ResponseWriter, r *http.Request, req *request) {
	values := r.URL.Query()
	f, problem := jobview.ParseFilter(values)
	if problem != "" {
		c.fail(w, r, http.StatusBadRequest, problem)
		return
	}
	cursor := ""
	if v, ok := values["cursor"]; ok {
		if v[0] == "" || len(v[0]) > 512 {
			c.fail(w, r, http.StatusBadRequest, badCursor)
			return
		}
		cursor = v[0]
	}
	page, err := c.Jobs.JobsPage(r.Context(), req.current.WorkspaceID, f, cursor, jobview.PageSize)
	if errors.Is(err, job.ErrBadCursor) {
		c.fail(w, r, http.StatusBadRequest, badCursor)
		return
	}
	if err != nil {
		c.internalError(w, r, "list jobs", err)
		return
	}
	data, err := jobview.ListOf(r.Context(), c.Results, page, f, Base+"/jobs", c.Clock.Now())
	if err != nil {
		c.internalError(w, r, "show a job", err)
		return
	}
	data.Script = c.jobsJS
	c.show(w, r, http.StatusOK, c.view(req, "jobs", "Jobs"), pages.Jobs(data))
}

// pollJobs is GET /app/jobs/poll?ids=a,b,...: the jobs page's script asks
// for the jobs its page shows running, at most every 2 s, and reads their
// rows. It reads only the jobs it names (one BatchGetItem); a job of
// another workspace is left out, as an id that names no job.
func (c *Console) pollJobs(w http.ResponseWriter, r *http.Request, req *request) {
	jobview.ServePoll(w, r, c.Jobs, c.Results, req.current.WorkspaceID, c.Clock.Now(), c.logger(r))
}

// ownJob reads the workspace's job named in the path; another
// workspace's job is the same 404 page as a missing one.
func (c *Console) ownJob(w http.ResponseWriter, r *http.Request, req *request) (*job.Job, bool) {
	id := strings.ToLower(r.PathValue("id"))
	if !job.ValidID(id) {
		c.notFound(w, r)
		return nil, false
	}
	j, err := c.Jobs.Job(r.Context(), id)
	if errors.Is(err, job.ErrNotFound) || err == nil && j.WorkspaceID != req.current.WorkspaceID {
		c.notFound(w, r)
		return nil, false
	}
	if err != nil {
		c.internalError(w, r, "read a job", err)
		return nil, false
	}
	return j, true
}

// jobPage shows one of the workspace's jobs: what GET /jobs/{id}/details
// and GET /jobs/{id}/deliveries read, its input images, its status
// history; its route and "Deliver again" for owners and admins only.
func (c *Console) jobPage(w http.ResponseWriter, r *http.Request, req *request) {
	j, ok := c.ownJob(w, r, req)
	if !ok {
		return
	}
	request, err := c.Jobs.JobRequest(r.Context(), j.ID)
	var d *webhook.Delivery
	if err == nil {
		if d, err = c.Jobs.Delivery(r.Context(), j.ID); errors.Is(err, webhook.ErrNotFound) {
			err = nil
		}
	}
	var data jobview.Page
	if err == nil {
		ep, _ := c.Catalog.ByPath(j.Endpoint) // nil: an endpoint since removed
		data, err = jobview.PageOf(r.Context(), c.Results, c.Assets, ep, j, request, d, req.current.Role.ManagesJobs(), c.Clock.Now())
	}
	if err != nil {
		c.internalError(w, r, "show a job", err)
		return
	}
	data.Script = c.jobsJS
	v := c.view(req, "jobs", "Job "+j.ID)
	v.Notice = jobview.Notices[r.URL.Query().Get("done")]
	c.show(w, r, http.StatusOK, v, pages.Job(req.acting(), data))
}

// cancelJob is the job page's "Cancel": DELETE /jobs/{id}'s path
// (lifecycle.Ender.Cancel): the job ends cancelled, its hold is released
// in its currency, nothing is charged, and the backlog is promoted.
func (c *Console) cancelJob(w http.ResponseWriter, r *http.Request, req *request) {
	j, ok := c.ownJob(w, r, req)
	if !ok {
		return
	}
	ended, err := c.Cancel.Cancel(r.Context(), j)
	if errors.Is(err, job.ErrConflict) && ended != nil {
		c.fail(w, r, http.StatusConflict, "The job has already ended; its status is "+string(ended.Status)+".")
		return
	}
	if err != nil {
		c.internalError(w, r, "cancel a job", err)
		return
	}
	c.logger(r).Info("job cancelled", "job_id", j.ID, "workspace_id", j.WorkspaceID, "user_id", req.session.UserID)
	http.Redirect(w, r, Base+"/jobs/"+j.ID+"?done=cancelled", http.StatusSeeOther)
}

// deliverAgain is the job page's "Deliver again", for owners and admins:
// the operator's `webhook redeliver` (webhook.SendAgain): the delivery's
// next attempt is due now and its message sent.
func (c *Console) deliverAgain(w http.ResponseWriter, r *http.Request, req *request) {
	j, ok := c.ownJob(w, r, req)
	if !ok {
		return
	}
	_, _, err := webhook.SendAgain(r.Context(), c.Jobs, c.Webhooks, j.ID, auth.NewID("rdl_"), c.Clock.Now())
	if msg := jobview.AgainRefused(err); msg != "" {
		c.fail(w, r, http.StatusConflict, msg)
		return
	}
	if errors.Is(err, webhook.ErrNotSent) { // due now: the sweeper sends it
		c.logger(r).Warn("redelivery due, message not sent", "job_id", j.ID, "error", err.Error())
	} else if err != nil {
		c.internalError(w, r, "send a webhook again", err)
		return
	}
	c.logger(r).Info("webhook sent again", "job_id", j.ID, "workspace_id", j.WorkspaceID, "user_id", req.session.UserID)
	http.Redirect(w, r, Base+"/jobs/"+j.ID+"?done=redelivery", http.StatusSeeOther)
}
