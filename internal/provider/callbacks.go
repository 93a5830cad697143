package provider

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"genjobs/internal/clock"
	"genjobs/internal/job"
)

// CallbackStore is the storage a callback needs (store.Store).
type CallbackStore interface {
	ProviderJob(ctx context.Context, id string) (*job.Job, job.Submission, error)
	Transition(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error)
	StashCallback(ctx context.Context, jobID, blobKey string) error
}

// Callbacks receives the providers' webhooks about predictions. It answers
// fast: a status change is one write; an ended prediction's body is
// stashed and its outputs are copied by a step of the provider queue.
type Callbacks struct {
	Store   CallbackStore
	Blobs   Blobs
	Queue   Queue
	Secrets Secrets
	Clients map[string]Client // by route: its endpoint path
	Routes  Routes
	Clock   clock.Clock
	Log     *slog.Logger
}

// Receive verifies and acts on one callback to /callbacks/{provider}/{job
// id}/{token}. ErrUnverified (answer 401) when the job, its token, the
// provider or the provider's proof does not hold; nil when the callback
// was taken or needs nothing (the job has ended).
func (c *Callbacks) Receive(ctx context.Context, providerName, jobID, token string, h http.Header, body []byte) error {
	if !job.ValidID(jobID) || token == "" {
		return ErrUnverified
	}
	j, sub, err := c.Store.ProviderJob(ctx, jobID)
	if errors.Is(err, job.ErrNotFound) {
		return ErrUnverified
	}
	if err != nil {
		return err
	}
	hash := TokenHash(token)
	known := slices.ContainsFunc(sub.TokenHashes, func(h string) bool {
		return subtle.ConstantTimeCompare([]byte(h), []byte(hash)) == 1
	})
	route, routed := c.Routes.For(j.Endpoint)
	if !known || !routed || j.Provider != providerName || route.Provider != providerName {
		return ErrUnverified
	}
	client := c.Clients[route.Endpoint]
	if client == nil {
		return ErrUnverified
	}
	var secret Secret
	if route.Secret != "" {
		if secret, err = c.Secrets.Get(ctx, route.Secret); err != nil {
			return fmt.Errorf("secret %s: %w", route.Secret, err)
		}
	}
	if err := client.Verify(ctx, route, h, body, secret, c.Clock.Now()); err != nil {
		return err
	}
	log := c.Log.With("job_id", j.ID, "workspace_id", j.WorkspaceID, "provider", providerName)
	if j.Status.Terminal() {
		log.Info("callback for a job that has ended: nothing to do", "status", string(j.Status))
		return nil
	}
	p, err := client.Parse(body)
	if err != nil {
		log.Warn("ignoring a verified callback that is not a prediction", "error", err.Error())
		return nil
	}
	if sub.PredictionID != "" && p.ID != "" && p.ID != sub.PredictionID {
		return fmt.Errorf("%w: the callback names prediction %s, not the job's", ErrUnverified, p.ID)
	}
	if !p.Status.Ended() {
		to := job.Scheduled
		var progress *float64
		if p.Status == Processing {
			to = job.Processing
			if p.Progress != nil && *p.Progress < 1 {
				to, progress = job.Sampling, p.Progress
			}
		}
		if !j.Status.CanMoveTo(to) && (j.Status != to || progress == nil) {
			return nil // never backwards
		}
		if progress != nil && j.Progress != nil && *progress <= *j.Progress {
			return nil
		}
		_, err := c.Store.Transition(ctx, j, job.Change{To: to, Progress: progress}, c.Clock.Now())
		if errors.Is(err, job.ErrConflict) {
			return nil
		}
		return err
	}
	key := fmt.Sprintf("callbacks/%s/%s.json", j.ID, newID())
	if err := c.Blobs.PutResult(ctx, key, "application/json", body); err != nil {
		return err
	}
	if err := c.Store.StashCallback(ctx, j.ID, key); err != nil {
		if errors.Is(err, job.ErrConflict) {
			_ = c.Blobs.DeleteResult(ctx, key)
			return nil // ended meanwhile
		}
		return err
	}
	log.Info("prediction ended; its outputs are copied next", "prediction_status", string(p.Status))
	return c.Queue.Schedule(ctx, Message{Kind: StepCopy, JobID: j.ID}, 0)
}
