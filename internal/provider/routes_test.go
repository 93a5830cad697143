package provider_test

import (
	"strings"
	"testing"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/provider"
)

// TestParseRoutesRefusesBadEntries: a bad routes document stops the
// function at init with an error naming the entry and the problem.
func TestParseRoutesRefusesBadEntries(t *testing.T) {
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	const img = "/generate/image/vendor-b/model-e-4"
	for _, c := range []struct{ doc, want string }{
		{`[]`, "not a JSON object"},
		{`{"/generate/image/vendor-z/nope": {"provider": "cog", "base_url": "http://127.0.0.1:5000", "input": {"prompt": "prompt"}}}`, `"/generate/image/vendor-z/nope": no such endpoint`},
		{`{"` + img + `": {"provider": "falai", "input": {"prompt": "prompt"}}}`, `unknown provider "falai"`},
		{`{"` + img + `": {"provider": "fal", "secret": "fal", "input": {"prompt": "prompt"}}}`, "a fal route needs model"},
		{`{"` + img + `": {"provider": "fal", "model": "flux", "secret": "fal", "input": {"prompt": "prompt"}}}`, "is not a fal app id"},
		{`{"` + img + `": {"provider": "fal", "model": "fal-ai/flux/dev", "input": {"prompt": "prompt"}}}`, "a fal route needs secret"},
		{`{"` + img + `": {"provider": "fal", "model": "fal-ai/flux/dev", "secret": "fal", "jwks_url": "file:///k", "input": {"prompt": "prompt"}}}`, "jwks_url"},
		{`{"` + img + `": {"provider": "replicate", "model": "a/b", "secret": "r", "jwks_url": "https://k", "input": {"prompt": "prompt"}}}`, "jwks_url is for fal routes only"},
		{`{"` + img + `": {"input": {"prompt": "prompt"}}}`, "provider is missing"},
		{`{"` + img + `": {"provider": "replicate", "secret": "r", "input": {"prompt": "prompt"}}}`, "needs model (owner/name) or version"},
		{`{"` + img + `": {"provider": "replicate", "secret": "r", "version": "abc", "input": {"prompt": "prompt"}}}`, "not 64 hexadecimal digits"},
		{`{"` + img + `": {"provider": "cog", "input": {"prompt": "prompt"}}}`, "needs base_url"},
		{`{"` + img + `": {"provider": "cog", "base_url": "ftp://x", "input": {"prompt": "prompt"}}}`, "is not an http(s) URL"},
		{`{"` + img + `": {"provider": "cog", "base_url": "http://127.0.0.1:5000", "input": {"duration": "seconds"}}}`, `field "duration", which the endpoint's request schema does not have`},
		{`{"` + img + `": {"provider": "cog", "base_url": "http://127.0.0.1:5000", "input": {"prompt": "prompt"}, "deadline_minutes": 121}}`, "over the maximum of 120"},
		{`{"` + img + `": {"provider": "cog", "base_url": "http://127.0.0.1:5000", "input": {"prompt": "prompt"}, "timeout": 3}}`, `unknown field "timeout"`},
	} {
		_, err := provider.ParseRoutes(c.doc, cat)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one saying %q", c.doc, err, c.want)
		}
	}
	rs, err := provider.ParseRoutes(`{"`+img+`": {"provider": "replicate", "model": "acme/photo", "secret": "replicate", "input": {"prompt": "prompt"}}}`, cat)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := rs.For(img)
	if !ok || r.BaseURL != provider.DefaultReplicateURL || r.Deadline() != 30*time.Minute {
		t.Fatalf("route %+v; want Replicate's API and the 30-minute default deadline", r)
	}
	rs, err = provider.ParseRoutes(`{"`+img+`": {"provider": "fal", "model": "fal-ai/flux/dev", "secret": "fal", "input": {"prompt": "prompt"}}}`, cat)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.For(img); r.BaseURL != provider.DefaultFalURL || r.JWKSURL != provider.DefaultFalJWKS {
		t.Fatalf("route %+v; want fal's queue and fal's JWKS", r)
	}
	if empty, err := provider.ParseRoutes("", cat); err != nil || len(empty) != 0 {
		t.Fatalf("an empty document: %v %v", empty, err)
	}
}
