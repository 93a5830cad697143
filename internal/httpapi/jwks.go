package httpapi

import (
	"context"
	"net/http"
	"sync"
)

// JWKS serves GET /.well-known/jwks.json, public: the keys that verify
// webhook signatures. build makes the document (a KMS GetPublicKey per key)
// at the first request, not at init; it is kept for the instance's life,
// since a key rotation is a deployment. Receivers may cache it 5 minutes.
func JWKS(build func(ctx context.Context) ([]byte, error)) *http.ServeMux {
	var (
		mu  sync.Mutex
		doc []byte
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if doc == nil {
			b, err := build(r.Context())
			if err != nil {
				mu.Unlock()
				internalError(w, r, "build the JWKS", err)
				return
			}
			doc = b
		}
		body := doc
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
	mux.Handle("/", NotFound())
	return mux
}
