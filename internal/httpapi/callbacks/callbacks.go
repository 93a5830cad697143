// Package callbacks serves the model providers' webhooks about routed jobs.
// It stands apart from package httpapi so that only the callbacks function
// links the provider adapters and the catalog.
package callbacks

import (
	"context"
	"errors"
	"io"
	"net/http"

	"genjobs/internal/httpapi"
	"genjobs/internal/provider"
)

// CallbackReceiver verifies and acts on a provider's callback (provider.Callbacks).
type CallbackReceiver interface {
	Receive(ctx context.Context, providerName, jobID, token string, h http.Header, body []byte) error
}

// Handler serves POST /callbacks/{provider}/{job_id}/{token}: the model
// providers' webhooks about a routed job's prediction. The route is public
// (no bearer token): the unguessable token of the URL and the provider's
// own proof (a Standard Webhooks signature, or Cog's bearer token) are
// checked instead. It is internal to the service: the OpenAPI document
// leaves it out.
type Handler struct {
	Receiver CallbackReceiver
}

// Routes is the callbacks function's mux.
func (c *Handler) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /callbacks/{provider}/{job_id}/{token}", c.receive)
	return mux
}

const msgUnverified = "The callback could not be verified."

func (c *Handler) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, provider.MaxCallbackBytes+1))
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
