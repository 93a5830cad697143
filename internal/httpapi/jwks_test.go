package httpapi_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/signing"
)

// The document is built per request (its signers keep their keys), so a
// key that changes behind it is published at once; a failed build is a 500.
func TestJWKSIsBuiltPerRequestAndCacheable(t *testing.T) {
	current, _ := signing.GenerateLocalKey()
	previous, _ := signing.GenerateLocalKey()
	builds, fail := 0, true
	h := lambdatest.Handler(httpapi.JWKS(func(ctx context.Context) ([]byte, error) {
		builds++
		if fail { // KMS unreachable at the first request: a 500, and a retry later
			fail = false
			return nil, errors.New("kms: connection refused")
		}
		var keys []signing.PublicKey
		for _, k := range []*signing.LocalKey{current, previous} {
			p, err := k.PublicKey(ctx)
			if err != nil {
				return nil, err
			}
			keys = append(keys, p)
		}
		return signing.JWKS(keys...)
	}))
	get := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/jwks.json", nil))
		return rec
	}
	if rec := get(); rec.Code != 500 || rec.Body.String() != `{"error":"Internal server error."}` {
		t.Errorf("KMS down: %d %s", rec.Code, rec.Body)
	}
	for i := 0; i < 3; i++ {
		rec := get()
		if rec.Code != 200 || rec.Header().Get("Cache-Control") != "public, max-age=300" {
			t.Fatalf("%d %v", rec.Code, rec.Header())
		}
		matchesSchema(t, "JWKS", rec.Body.Bytes())
		keys, err := signing.ParseJWKS(rec.Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []*signing.LocalKey{current, previous} {
			p, _ := k.PublicKey(context.Background())
			if _, ok := keys.Lookup(p.ID); !ok {
				t.Errorf("key %s is not in the document", p.ID)
			}
		}
	}
	if builds != 4 {
		t.Errorf("built %d times; want once per request", builds)
	}
	replaced, _ := signing.GenerateLocalKey()
	current = replaced
	keys, err := signing.ParseJWKS(get().Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := replaced.PublicKey(context.Background())
	if _, ok := keys.Lookup(p.ID); !ok {
		t.Error("a key changed behind the JWKS is not in the next document")
	}
}
