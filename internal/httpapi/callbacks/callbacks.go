// Package callbacks serves the model providers' webhooks about routed jobs.
// It stands apart from package httpapi so that only the callbacks function
// links the provider adapters and the catalog.
package callbacks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"genjobs/internal/httpapi"
	"genjobs/internal/provider"
)

// CallbackReceiver verifies and acts on a provider's callback, and keeps
// the files a Cog server uploads (provider.Callbacks).
type CallbackReceiver interface {
	Receive(ctx context.Context, providerName, jobID, token string, h http.Header, body []byte) error
	Upload(ctx context.Context, name string, h http.Header, contentLength int64, body io.Reader) (location string, err error)
}

// Handler serves POST /callbacks/{provider}/{job_id}/{token}: the model
// providers' webhooks about a routed job's prediction; and PUT
// /callbacks/cog/uploads/{name}: the upload store a Cog server's
// --upload-url points at. The routes are public (no bearer token): the
// unguessable token of the URL and the provider's own proof (a Standard
// Webhooks or ED25519 signature, or Cog's bearer token), or the upload's
// unguessable prediction id, are checked instead. They are internal to the
// service: the OpenAPI document leaves them out.
type Handler struct {
	Receiver CallbackReceiver
}

// Routes is the callbacks function's mux.
func (c *Handler) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /callbacks/{provider}/{job_id}/{token}", c.receive)
	mux.HandleFunc("PUT /callbacks/cog/uploads/{name}", c.upload)
	return mux
}

func (c *Handler) upload(w http.ResponseWriter, r *http.Request) {
	loc, err := c.Receiver.Upload(r.Context(), r.PathValue("name"), r.Header, r.ContentLength, r.Body)
	switch {
	case errors.Is(err, provider.ErrUploadToken):
		httpapi.Logger(r.Context()).Warn("upload refused", "reason", err.Error())
		httpapi.WriteError(w, http.StatusUnauthorized, "The route's webhook token is required: give it as the password of the upload URL (--upload-url https://cog:{webhook_token}@{host}/callbacks/cog/uploads/) or as Authorization: Bearer {webhook_token}.")
	case errors.Is(err, provider.ErrUnverified):
		httpapi.Logger(r.Context()).Warn("upload refused", "reason", err.Error())
		httpapi.WriteError(w, http.StatusUnauthorized, "The upload could not be verified.")
	case errors.Is(err, provider.ErrUploadTooLarge):
		httpapi.WriteError(w, http.StatusRequestEntityTooLarge, "The file is larger than 4 MiB, the most the upload store takes.")
	case errors.Is(err, provider.ErrUploadName):
		httpapi.WriteError(w, http.StatusBadRequest, "The file name may hold letters, digits, '.', '_' and '-' only, at most 200.")
	case err != nil:
		httpapi.InternalError(w, r, "upload", err)
	default:
		w.Header().Set("Location", loc)
		httpapi.WriteJSON(w, http.StatusCreated, map[string]string{"url": loc})
	}
}

const msgUnverified = "The callback could not be verified."

func (c *Handler) receive(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, provider.MaxCallbackBytes+1)
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "The body could not be read.")
		return
	}
	if len(body) > provider.MaxCallbackBytes {
		httpapi.WriteError(w, http.StatusRequestEntityTooLarge, "The body is larger than 6 MiB.")
		return
	}
	err = c.Receiver.Receive(r.Context(), r.PathValue("provider"), r.PathValue("job_id"), r.PathValue("token"), r.Header, body)
	switch {
	case errors.Is(err, provider.ErrUnverified):
		httpapi.Logger(r.Context()).Warn("callback refused", "reason", err.Error())
		httpapi.WriteError(w, http.StatusUnauthorized, msgUnverified)
	case err != nil:
		httpapi.InternalError(w, r, "callback", err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// readBody reads at most max bytes of r's body into a buffer of its
// declared length (a Cog server's webhook carries its files: megabytes read
// without growing the buffer a dozen times).
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > max {
		return io.ReadAll(io.LimitReader(r.Body, max))
	}
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(r.Body, max))
	return buf.Bytes(), err
}
