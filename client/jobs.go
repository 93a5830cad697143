package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"path"
	"time"
)

// Status is a job's state. A job only moves forward through them, in the
// order of the constants; the last three are terminal.
type Status string

const (
	StatusBacklogged           Status = "backlogged" // waiting for a running slot of its workspace
	StatusQueued               Status = "queued"
	StatusScheduled            Status = "scheduled"
	StatusProcessing           Status = "processing"
	StatusSampling             Status = "sampling"
	StatusIntermediateComplete Status = "intermediate-complete" // previews may be in Result
	StatusCompleted            Status = "completed"
	StatusFailed               Status = "failed"
	StatusCancelled            Status = "cancelled"
)

// Terminal reports whether the job has ended.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Job is a job record as the API shows it.
type Job struct {
	ID          string     `json:"job_id"`
	Status      Status     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
	CompletedAt *time.Time `json:"completed_at"` // set on every terminal state
	// Result holds the output URLs once completed (previews may appear
	// earlier). The URLs need no token and are valid for an hour from the
	// read that minted them: Download reads the job again when one has
	// expired.
	Result *Result `json:"result"`
	// Error is set on failed jobs only.
	Error *JobError `json:"error,omitempty"`
	// Progress is nil or 0..1, never decreasing; 1 once completed.
	Progress *float64 `json:"progress,omitempty"`

	raw      json.RawMessage
	replayed bool
}

// Result is a job's output.
type Result struct {
	URLs []string `json:"urls"`
}

// JobError says why a job failed: Code is one of invalid_input,
// input_blocked, engine_error, provider_error, timeout, internal.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// UnmarshalJSON keeps the record's bytes for RawJSON.
func (j *Job) UnmarshalJSON(b []byte) error {
	type plain Job
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*j = Job(p)
	j.raw = append(json.RawMessage(nil), b...)
	return nil
}

// RawJSON is the record exactly as the API sent it.
func (j *Job) RawJSON() json.RawMessage { return j.raw }

// Replayed reports whether the creation answered an earlier request with
// the same Idempotency-Key (Idempotent-Replayed: true) instead of creating
// the job: a retry after a lost answer, for one.
func (j *Job) Replayed() bool { return j.replayed }

// JobFailedError is a job that ended failed.
type JobFailedError struct{ Job *Job }

func (e *JobFailedError) Error() string {
	if e.Job.Error == nil {
		return fmt.Sprintf("job %s failed", e.Job.ID)
	}
	if e.Job.Error.Message == "" {
		return fmt.Sprintf("job %s failed: %s", e.Job.ID, e.Job.Error.Code)
	}
	return fmt.Sprintf("job %s failed: %s: %s", e.Job.ID, e.Job.Error.Code, e.Job.Error.Message)
}

// JobCancelledError is a job that was cancelled before it ended.
type JobCancelledError struct{ Job *Job }

func (e *JobCancelledError) Error() string { return fmt.Sprintf("job %s was cancelled", e.Job.ID) }

// JobsService reads, lists, waits for, downloads and cancels jobs.
type JobsService struct{ c *Client }

// Get reads a job. A job of another workspace, like a missing one, is an
// *APIError with status 404.
func (s *JobsService) Get(ctx context.Context, id string) (*Job, error) {
	var j Job
	if err := s.c.getJSON(ctx, "/jobs/"+url.PathEscape(id), nil, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Cancel cancels a job that has not ended and returns its cancelled record;
// a job that has already ended is an *APIError with status 409. When a
// retry meets the 409 (an earlier attempt's answer was lost), Cancel reads
// the job and reports success if it is cancelled.
func (s *JobsService) Cancel(ctx context.Context, id string) (*Job, error) {
	resp, err := s.c.do(ctx, request{method: http.MethodDelete, path: "/jobs/" + url.PathEscape(id)})
	var ae *APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusConflict && ae.retried {
		if j, gerr := s.Get(ctx, id); gerr == nil && j.Status == StatusCancelled {
			return j, nil
		}
	}
	if err != nil {
		return nil, err
	}
	var j Job
	if err := decode(resp, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ListParams narrows a job listing.
type ListParams struct {
	Status Status // only jobs in this state
	Limit  int    // jobs per page, 1..1000 (default 100)
	Cursor string // the page to read; from JobPage.NextCursor
}

// JobPage is one page of jobs, newest first.
type JobPage = Page[*Job]

// ListPage reads one page of the workspace's jobs.
func (s *JobsService) ListPage(ctx context.Context, p ListParams) (*JobPage, error) {
	q := url.Values{}
	if p.Status != "" {
		q.Set("status", string(p.Status))
	}
	return getPage[*Job](ctx, s.c, "/jobs", q, p.Limit, p.Cursor)
}

// List walks every page from p.Cursor on, newest job first; it stops at the
// first error, which it yields.
//
//	for j, err := range c.Jobs.List(ctx, client.ListParams{Status: client.StatusFailed}) {
//		if err != nil { return err }
//		fmt.Println(j.ID, j.Error.Code)
//	}
func (s *JobsService) List(ctx context.Context, p ListParams) iter.Seq2[*Job, error] {
	return paginate(p.Cursor, func(c string) (*JobPage, error) { p.Cursor = c; return s.ListPage(ctx, p) })
}

// Delivery is one attempt to POST a job's record to its webhook URL.
type Delivery struct {
	Attempt       int        `json:"attempt"`
	At            time.Time  `json:"at"`
	StatusCode    *int       `json:"status_code"` // nil when no answer came
	Error         *string    `json:"error"`
	NextAttemptAt *time.Time `json:"next_attempt_at"` // nil when no further attempt is due
}

// Deliveries lists the webhook delivery attempts of a job, oldest first.
func (s *JobsService) Deliveries(ctx context.Context, id string) ([]Delivery, error) {
	var out struct {
		Items []Delivery `json:"items"`
	}
	if err := s.c.getJSON(ctx, "/jobs/"+url.PathEscape(id)+"/deliveries", nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// Details is what a job was asked, where it came from, who made it and
// what it costs (GET /jobs/{id}/details); the record (Job) has none of it.
type Details struct {
	JobID    string `json:"job_id"`
	Endpoint string `json:"endpoint"` // the generation path, e.g. /generate/image/vendor-b/model-e-4
	// Input is the request body as accepted, defaults filled; an image
	// given as a data URI is cut to its first 64 characters.
	Input json.RawMessage `json:"input"`
	// Source is "api" (an API token), "mcp" (an MCP tool) or "app" (the
	// web application).
	Source string `json:"source"`
	// CreatedBy is the API token's name, or the signed-in person's email;
	// nil when unknown.
	CreatedBy *string    `json:"created_by"`
	Billing   Billing    `json:"billing"`
	StartedAt *time.Time `json:"started_at"` // nil until a worker or provider took it
	EndedAt   *time.Time `json:"ended_at"`   // the record's completed_at
	// Route is "reference" (the built-in engines) or the model provider
	// and model the job was routed to ("replicate:owner/name").
	Route string `json:"route"`
}

// Billing is a job's price in the one currency it is billed in: "usd"
// (the API balance: jobs made with an API token) or "cu" (the workspace's
// compute units: jobs made in the application or through an OAuth MCP
// connection).
type Billing struct {
	Currency string `json:"currency"`
	// Price is USD as a decimal string with six places ("0.030000"), or
	// compute units as a whole number ("3").
	Price string `json:"price"`
	// Charged is nil until the job ends, Price once completed, "0" once
	// failed or cancelled.
	Charged *string `json:"charged"`
}

// Details reads a job's details. A job of another workspace, like a
// missing one, is an *APIError with status 404.
func (s *JobsService) Details(ctx context.Context, id string) (*Details, error) {
	var d Details
	if err := s.c.getJSON(ctx, "/jobs/"+url.PathEscape(id)+"/details", nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// WaitOptions tune Wait. The zero value (or nil) polls every second at
// first, then less often, up to every 5 seconds.
type WaitOptions struct {
	// Interval is the first wait between two reads (default 1 s); it grows
	// by half each time up to MaxInterval (default 5 s).
	Interval, MaxInterval time.Duration
	// OnUpdate, when set, is called with every record read, the first one
	// included.
	OnUpdate func(*Job)
}

// Wait reads the job until it ends and returns it when completed. A failed
// job is a *JobFailedError and a cancelled one a *JobCancelledError, each
// with the final record; a done ctx ends the wait with its error.
func (s *JobsService) Wait(ctx context.Context, id string, o *WaitOptions) (*Job, error) {
	var opt WaitOptions
	if o != nil {
		opt = *o
	}
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.MaxInterval <= 0 {
		opt.MaxInterval = 5 * time.Second
	}
	for interval := opt.Interval; ; interval = min(interval*3/2, opt.MaxInterval) {
		j, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if opt.OnUpdate != nil {
			opt.OnUpdate(j)
		}
		switch j.Status {
		case StatusCompleted:
			return j, nil
		case StatusFailed:
			return j, &JobFailedError{Job: j}
		case StatusCancelled:
			return j, &JobCancelledError{Job: j}
		}
		if err := s.c.sleep(ctx, interval); err != nil {
			return nil, err
		}
	}
}

// Download writes the job's result file number i (from 0) to w and returns
// the bytes written. Result URLs expire an hour after the read that minted
// them: when storage answers 403, Download reads the job again for a fresh
// URL and tries once more.
func (s *JobsService) Download(ctx context.Context, j *Job, i int, w io.Writer) (int64, error) {
	if j.Result == nil || i < 0 || i >= len(j.Result.URLs) {
		return 0, fmt.Errorf("%w: job %s has no result file %d", ErrNoResult, j.ID, i)
	}
	n, err := s.c.fetch(ctx, j.Result.URLs[i], w)
	var expired *expiredURLError
	if !errors.As(err, &expired) {
		return n, err
	}
	fresh, err := s.Get(ctx, j.ID)
	if err != nil {
		return 0, err
	}
	if fresh.Result == nil || i >= len(fresh.Result.URLs) {
		return 0, fmt.Errorf("%w: job %s no longer has result file %d", ErrNoResult, j.ID, i)
	}
	*j = *fresh
	return s.c.fetch(ctx, fresh.Result.URLs[i], w)
}

// FileName is a local name for result file i: the last element of its URL's
// path (such as 0.png).
func (j *Job) FileName(i int) string {
	if j.Result == nil || i < 0 || i >= len(j.Result.URLs) {
		return ""
	}
	u, err := url.Parse(j.Result.URLs[i])
	if err != nil {
		return ""
	}
	return path.Base(u.Path)
}

type expiredURLError struct{ status int }

func (e *expiredURLError) Unwrap() error { return ErrDownload }

func (e *expiredURLError) Error() string {
	return fmt.Sprintf("client: the result URL was refused with %d (expired)", e.status)
}

// fetch GETs a presigned URL (no token) into w.
func (c *Client) fetch(ctx context.Context, u string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrRequest, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("%w: download %s: %w", ErrUnreachable, redact(u), err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusForbidden:
		return 0, &expiredURLError{resp.StatusCode}
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("%w: %s: %s", ErrDownload, redact(u), resp.Status)
	}
	return io.Copy(w, resp.Body)
}

// redact drops a presigned URL's query (its signature) from messages.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "the result URL"
	}
	p.RawQuery = ""
	return p.String()
}
