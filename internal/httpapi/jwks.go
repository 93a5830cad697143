package httpapi

import (
	"context"
	"net/http"
)

// JWKS serves GET /.well-known/jwks.json, public: the keys that verify
// webhook signatures. build makes the document at each request, not at
// init: the signers behind it keep their public keys and read them from KMS
// again only when those are old (signing.KMS.MaxAge), so a key made anew
// under the alias is published without a deployment. A failed build is a
// 500 and is tried again by the next request. Receivers may cache the
// document 5 minutes.
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
