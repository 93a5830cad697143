package provider

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
	// MaxOutputBytes caps each output file a callback carries (a Cog
	// server's data: URIs): the runner's own cap (Timings); 0 is
	// DefaultTimings'.
	MaxOutputBytes int64
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
	var files []string // the data: URI outputs stored
	if p.Status == Succeeded && j.Provider == Cog {
		if files, err = c.storeDataURIs(ctx, j, &p, log); err != nil {
			return err
		}
	}
	stash, err := json.Marshal(stashedPrediction(p))
	if err != nil {
		return err
	}
	key := fmt.Sprintf("callbacks/%s/%s%s", j.ID, newID(), stashSuffix)
	if err := c.Blobs.PutResult(ctx, key, "application/json", stash); err != nil {
		c.deleteFiles(ctx, append(files, key), log)
		return err
	}
	if err := c.Store.StashCallback(ctx, j.ID, key); err != nil {
		if errors.Is(err, job.ErrConflict) {
			c.deleteFiles(ctx, append(files, key), log)
			return nil // ended meanwhile
		}
		return err
	}
	log.Info("prediction ended; its outputs are copied next", "prediction_status", string(p.Status))
	return c.Queue.Schedule(ctx, Message{Kind: StepCopy, JobID: j.ID}, 0)
}

// storeDataURIs stores each data: URI output of a Cog server's succeeded
// prediction in the job's upload store, decoded as it is read, and names it
// there instead, as if the server had uploaded it (--upload-url): the
// stashed callback then carries a reference rather than the file's base64,
// and the step that completes the job takes the stored file as it is
// (storedUpload), without reading the body back or decoding it again. The
// files are in the bucket before the callback is answered; the step that
// cancels the prediction of a job that ends otherwise deletes them with
// the server's own uploads. A URI that can never be stored (malformed, over
// the cap) stays as it is, for the step to fail the job with the reason.
// stored is the keys written; on an error none remains.
func (c *Callbacks) storeDataURIs(ctx context.Context, j *job.Job, p *Prediction, log *slog.Logger) (stored []string, err error) {
	max := c.MaxOutputBytes
	if max <= 0 {
		max = DefaultTimings.MaxOutputBytes
	}
	prefix := newID()[:8]
	for i, ref := range p.Outputs {
		if !isDataURI(ref) {
			continue
		}
		contentType, data, ok := decodeDataURI(ref, max)
		if !ok {
			continue
		}
		mediaType := outputType(contentType)
		name := fmt.Sprintf("%s-output-%d.%s", prefix, i, extension(mediaType, ""))
		key := uploadKey(j.ID, name)
		if err := c.Blobs.PutResult(ctx, key, mediaType, data); err != nil {
			c.deleteFiles(ctx, stored, log)
			return nil, err
		}
		stored = append(stored, key)
		p.Outputs[i] = j.BaseURL + UploadsPath + j.ID + "/" + name
	}
	if len(stored) > 0 {
		log.Info("stored the prediction's data: URI outputs", "files", len(stored))
	}
	return stored, nil
}

// decodeDataURI decodes a data: URI that is in memory whole (a callback's
// body) in one pass into a buffer of its size. ok is false for a URI
// that cannot be stored (malformed, over max bytes).
func decodeDataURI(ref string, max int64) (contentType string, data []byte, ok bool) {
	meta, text, found := strings.Cut(strings.TrimPrefix(ref, "data:"), ",")
	if !found {
		return "", nil, false
	}
	contentType, b64 := strings.CutSuffix(meta, ";base64")
	var err error
	if b64 {
		if int64(base64.StdEncoding.DecodedLen(len(text))) > max+3 {
			return "", nil, false
		}
		data, err = base64.StdEncoding.DecodeString(text)
	} else {
		var plain string
		plain, err = url.PathUnescape(text)
		data = []byte(plain)
	}
	return contentType, data, err == nil && int64(len(data)) <= max
}

// deleteFiles deletes what a callback stored for a stash it did not make.
func (c *Callbacks) deleteFiles(ctx context.Context, keys []string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, k := range keys {
		if err := c.Blobs.DeleteResult(ctx, k); err != nil {
			log.Warn("could not delete a file of a callback that was not stashed; the bucket's lifecycle rule removes it", "key", k, "error", err.Error())
		}
	}
}

// stashSuffix ends the key of a stash that holds a stashed (a callback
// stashed before it held the provider's body as it came).
const stashSuffix = ".prediction.json"

// stashed is what a callback that ended a prediction leaves for the step
// that acts on it: the prediction as the callback read it, after its proof
// was checked, with its data: URI outputs stored already (storeDataURIs).
type stashed struct {
	ID      string   `json:"id,omitempty"`
	Status  Status   `json:"status"`
	Outputs []string `json:"outputs,omitempty"`
	Paths   []string `json:"paths,omitempty"`
	Error   string   `json:"error,omitempty"`
}

func stashedPrediction(p Prediction) stashed {
	return stashed{ID: p.ID, Status: p.Status, Outputs: p.Outputs, Paths: p.Paths, Error: p.Error}
}

// readStash reads a stashed callback: a stashed, or, under a key of
// before stashSuffix, the provider's body, which client parses.
func readStash(key string, body []byte, client Client) (Prediction, error) {
	if !strings.HasSuffix(key, stashSuffix) {
		return client.Parse(body)
	}
	var st stashed
	if err := json.Unmarshal(body, &st); err != nil {
		return Prediction{}, fmt.Errorf("decode the stashed callback: %w", err)
	}
	if !st.Status.Ended() {
		return Prediction{}, fmt.Errorf("the stashed callback's prediction has not ended (%q)", st.Status)
	}
	return Prediction{ID: st.ID, Status: st.Status, Outputs: st.Outputs, Paths: st.Paths, Error: st.Error}, nil
}
