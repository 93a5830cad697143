package jobview

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"genjobs/internal/asset"
	"genjobs/internal/catalog"
	"genjobs/internal/job"
)

// Row is what a list row and the poll route show of a job besides its
// details: its status with progress, how long it has taken, its cost, and
// its preview.
type Row struct {
	State    string // "processing 40%"
	Running  bool
	Duration string // "12 s"; from its creation to its end, or to now
	Shown    string // what it cost once ended, else its price and "held"
	Preview  *Output
}

// RowOf is v's row at now.
func RowOf(v Job, now time.Time) Row {
	r := Row{State: string(v.Status), Running: !v.Status.Terminal()}
	if r.Running && v.Progress != nil {
		r.State += fmt.Sprintf(" %.0f%%", *v.Progress)
	}
	end := now
	if v.CompletedAt != nil {
		end = *v.CompletedAt
	}
	r.Duration = Duration(end.Sub(v.CreatedAt))
	r.Shown = v.Cost + " held"
	if v.Charged != "" {
		r.Shown = v.Charged
	}
	if len(v.Outputs) > 0 {
		o := v.Outputs[0]
		r.Preview = &o
	}
	return r
}

// Duration is d for reading: "850 ms", "12 s", "3 min 5 s", "2 h 4 min".
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "0 s"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

// Event is one line of a job's status history.
type Event struct {
	What string
	At   time.Time
}

// History is the status history a job's record holds (docs/console.md,
// "Jobs"): its creation (queued, or backlogged until its promotion), its
// start, its last progress while it runs, and its end. A job keeps no
// log of every write: these are the times its item records.
func History(j *job.Job) []Event {
	var out []Event
	switch {
	case j.QueuedAt != nil && j.QueuedAt.After(j.CreatedAt):
		out = append(out, Event{"created, backlogged (the workspace's running slots were full)", j.CreatedAt},
			Event{"queued", *j.QueuedAt})
	case j.Status == job.Backlogged:
		out = append(out, Event{"created, backlogged (the workspace's running slots are full)", j.CreatedAt})
	default:
		out = append(out, Event{"created, queued", j.CreatedAt})
	}
	if j.StartedAt != nil {
		out = append(out, Event{"started", *j.StartedAt})
	}
	switch {
	case j.CompletedAt != nil:
		what := string(j.Status)
		if j.Error != nil {
			what += ": " + j.Error.Code
		}
		out = append(out, Event{what, *j.CompletedAt})
	case j.Status != job.Queued && j.Status != job.Backlogged && !j.UpdatedAt.IsZero():
		what := string(j.Status)
		if j.Progress != nil {
			what += fmt.Sprintf(" at %.0f%%", *j.Progress)
		}
		out = append(out, Event{what + " (last update)", j.UpdatedAt})
	}
	return out
}

// Input is one input image of a job, as its page shows it.
type Input struct {
	Field string // "start_image", "reference_images[1]"
	URL   string // what the page loads; "" when it cannot be shown
	Ref   string // the value as asked, shortened
}

// ImageRefs are a request's image-valued values, by field name and
// position: the values of the fields its endpoint's schema says are of
// format image-ref, as the worker finds the images it fetches. A job of an
// endpoint the catalog no longer has (ep nil) shows none.
func ImageRefs(ep *catalog.Endpoint, request json.RawMessage) []Input {
	var params map[string]any
	if ep == nil || json.Unmarshal(request, &params) != nil {
		return nil
	}
	var out []Input
	for _, r := range ep.ImageRefs(params) {
		out = append(out, Input{Field: r.Name(), Ref: r.Ref})
	}
	return out
}

// AssetURLs mints a GET URL of one of a workspace's uploaded assets
// (s3url.AssetLinks).
type AssetURLs interface {
	AssetURL(ctx context.Context, workspaceID, id string) (string, error)
}

// Inputs are j's input images (request is its stored request) as the page
// can show them under the console's CSP: https URLs and image data URIs as
// they are, the workspace's own assets by a presigned URL (an asset URL
// names the asset only; its bytes live under the job's workspace).
func Inputs(ctx context.Context, assets AssetURLs, ep *catalog.Endpoint, j *job.Job, request json.RawMessage) ([]Input, error) {
	var out []Input
	for _, ref := range ImageRefs(ep, request) {
		in := Input{Field: ref.Field, Ref: ref.Ref}
		if len(in.Ref) > 96 {
			in.Ref = in.Ref[:96] + "…"
		}
		switch id, ok := asset.IDFromURL("", ref.Ref); {
		case ok:
			u, err := assets.AssetURL(ctx, j.WorkspaceID, id)
			if err != nil {
				return nil, err
			}
			in.URL = u
		case strings.HasPrefix(ref.Ref, "https://"), strings.HasPrefix(ref.Ref, "data:image/"):
			in.URL = ref.Ref
		}
		out = append(out, in)
	}
	return out, nil
}
