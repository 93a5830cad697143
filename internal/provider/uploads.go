package provider

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"genjobs/internal/job"
)

// The upload store: where a Cog server started with --upload-url
// {API}/callbacks/cog/uploads/ puts its output files (PUT {upload url}{file
// name}, X-Prediction-ID naming the prediction). Each file is stored in the
// results bucket under the job's results and answered with a Location of
// this API, which the server reports as the output; the step that
// completes the job takes the stored file as it is.

// MaxUploadBytes bounds one file of the upload store: the route is served
// by a Lambda function, whose event (the body base64-encoded) stops at 6 MB.
const MaxUploadBytes = 4 << 20

// UploadsPath is the upload store's path: a Cog server's --upload-url is
// the API's address followed by it.
const UploadsPath = "/callbacks/cog/uploads/"

// Errors of the upload store.
var (
	// ErrUploadTooLarge: the file is over MaxUploadBytes.
	ErrUploadTooLarge = fmt.Errorf("the file is larger than %s", size(MaxUploadBytes))
	// ErrUploadToken: the route's secret has a webhook_token and the
	// upload carries none.
	ErrUploadToken = fmt.Errorf("%w: the route's webhook_token is required", ErrUnverified)
	// ErrUploadName: the file name is not one the store keeps.
	ErrUploadName = errors.New("the file name may hold letters, digits, '.', '_' and '-' only, at most 200")
)

// uploadName is a file name the store keeps: 1 to 200 of letters, digits,
// '.', '_' and '-', no dot first (no path). Checked without a regular
// expression: one with that bounded repetition took about 0.2 ms of every
// cold start of the functions that link this package to compile.
func uploadName(name string) bool {
	if name == "" || len(name) > 200 || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Upload stores one file a Cog server PUT to the upload store and returns
// the Location to answer. The proof is the prediction id this service
// chose (X-Prediction-ID): unguessable, bound to one job, accepted while
// that job runs on a route to a Cog server; and, when the route's secret
// has a webhook_token, that token (ErrUploadToken without it): as
// "Authorization: Bearer {token}", or as the password of Basic
// credentials, which Cog's uploader, sending no header of its own, sends
// for an --upload-url of the form https://cog:{token}@{API host}/....
// ErrUnverified when a proof does not hold; nothing is stored then. The
// file is kept as the media type its bytes show (StoredType), whatever
// the uploader declared; anything else as an attachment.
func (c *Callbacks) Upload(ctx context.Context, name string, h http.Header, contentLength int64, body io.Reader) (string, error) {
	if !uploadName(name) {
		return "", ErrUploadName
	}
	if contentLength > MaxUploadBytes {
		return "", ErrUploadTooLarge
	}
	predictionID := h.Get("X-Prediction-ID")
	jobID, _, ok := JobOfPrediction(predictionID)
	if !ok {
		return "", fmt.Errorf("%w: X-Prediction-ID names no prediction of this service", ErrUnverified)
	}
	j, sub, err := c.Store.ProviderJob(ctx, jobID)
	if errors.Is(err, job.ErrNotFound) {
		return "", fmt.Errorf("%w: X-Prediction-ID names no job", ErrUnverified)
	}
	if err != nil {
		return "", err
	}
	route, routed := c.Routes.For(j.Endpoint)
	switch {
	case !routed || j.Provider != Cog || route.Provider != Cog || sub.Key == "":
		return "", fmt.Errorf("%w: the prediction's job is not at a Cog server", ErrUnverified)
	case subtle.ConstantTimeCompare([]byte(predictionID), []byte(PredictionID(j.ID, sub.Key))) != 1:
		return "", fmt.Errorf("%w: X-Prediction-ID is not the job's prediction", ErrUnverified)
	case j.Status.Terminal():
		return "", fmt.Errorf("%w: the prediction's job has ended", ErrUnverified)
	}
	var secret Secret
	if route.Secret != "" {
		if secret, err = c.Secrets.Get(ctx, route.Secret); err != nil {
			return "", fmt.Errorf("secret %s: %w", route.Secret, err)
		}
	}
	got, given := uploadToken(h.Get("Authorization"))
	switch {
	case secret.WebhookToken != "" && !given:
		return "", ErrUploadToken
	case given && (secret.WebhookToken == "" || subtle.ConstantTimeCompare([]byte(got), []byte(secret.WebhookToken)) != 1):
		return "", fmt.Errorf("%w: the upload's token is not the route's webhook_token", ErrUnverified)
	}
	data, err := io.ReadAll(io.LimitReader(body, MaxUploadBytes+1))
	if err != nil {
		return "", fmt.Errorf("read the upload: %w", err)
	}
	if len(data) > MaxUploadBytes {
		return "", ErrUploadTooLarge
	}
	stored := newID()[:8] + "-" + name
	contentType, media := StoredType(data)
	if media {
		err = c.Blobs.PutResult(ctx, uploadKey(j.ID, stored), contentType, data)
	} else {
		err = c.Blobs.PutAttachment(ctx, uploadKey(j.ID, stored), data)
	}
	if err != nil {
		return "", err
	}
	c.Log.Info("a Cog server uploaded an output", "job_id", j.ID, "workspace_id", j.WorkspaceID, "file", stored, "bytes", len(data),
		"content_type", contentType, "declared_type", h.Get("Content-Type"))
	return j.BaseURL + UploadsPath + j.ID + "/" + stored, nil
}

// uploadToken reads the token of an upload's Authorization header: a
// Bearer token, or the password of Basic credentials. given is false when
// the header is absent; a header of another form gives an empty token.
func uploadToken(auth string) (token string, given bool) {
	if auth == "" {
		return "", false
	}
	if t, ok := strings.CutPrefix(auth, "Bearer "); ok {
		return t, true
	}
	if b64, ok := strings.CutPrefix(auth, "Basic "); ok {
		if raw, err := base64.StdEncoding.DecodeString(b64); err == nil {
			if _, pw, ok := strings.Cut(string(raw), ":"); ok {
				return pw, true
			}
		}
	}
	return "", true
}

func uploadKey(jobID, stored string) string { return "results/" + jobID + "/upload-" + stored }

// storedUpload is the results key of an output URL that names a file of the
// job's in the upload store (Upload's Location); ok false for any other URL.
func storedUpload(j *job.Job, ref string) (key string, ok bool) {
	rest, ok := strings.CutPrefix(ref, j.BaseURL+UploadsPath+j.ID+"/")
	if !ok || len(rest) < 10 || rest[8] != '-' || strings.Trim(rest[:8], "0123456789abcdef") != "" || !uploadName(rest[9:]) {
		return "", false
	}
	return uploadKey(j.ID, rest), true
}
