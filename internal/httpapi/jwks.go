package httpapi

import (
	"context"
	"net/http"
)

// JWKS serves GET /.well-known/jwks.json, public: the keys that verify
// webhook signatures. build makes or returns the document (signing.Publisher
// keeps it, and asks KMS at the first request, not at init); a failed build
// is tried again by the next request. Receivers may cache it 5 minutes.
func JWKS(build func(ctx context.Context) ([]byte, error)) *http.ServeMux {
	// One build at a time; a request waiting for another's ends with its
	// own deadline, as a 503, rather than queueing behind a slow KMS.
	turn := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		select {
		case turn <- struct{}{}:
		case <-r.Context().Done():
			internalError(w, r, "wait for the JWKS", r.Context().Err())
			return
		}
		body, err := build(r.Context())
		<-turn
		if err != nil {
			internalError(w, r, "build the JWKS", err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
	mux.Handle("/", NotFound())
	return mux
}
