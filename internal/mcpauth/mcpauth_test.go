package mcpauth_test

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"regexp"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/mcpauth"
)

func TestTheProtectedResourceMetadataIsServedAtBothAddresses(t *testing.T) {
	h := mcpauth.Handler("https://api.test")
	want := map[string]any{
		"resource":                 "https://api.test/mcp",
		"authorization_servers":    []any{"https://api.test"},
		"scopes_supported":         []any{"jobs"},
		"bearer_methods_supported": []any{"header"},
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		rec := lambdatest.Serve(h, httptest.NewRequest("GET", path, nil))
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", path, got, want)
		}
	}
	if rec := lambdatest.Serve(h, httptest.NewRequest("GET", "/.well-known/other", nil)); rec.Code != 404 {
		t.Errorf("another path: %d", rec.Code)
	}
}

// The challenge names the metadata in a quoted-string, which both a strict
// parser (the Go SDK's) and a client's quoted-string pattern read.
func TestTheChallengeQuotesTheMetadataURL(t *testing.T) {
	url := "https://api.test/.well-known/oauth-protected-resource/mcp"
	for _, invalid := range []bool{false, true} {
		c := mcpauth.Challenge("https://api.test/", invalid)
		m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(c)
		if m == nil || m[1] != url {
			t.Errorf("%q: no quoted resource_metadata=%q", c, url)
		}
		parsed, err := oauthex.ParseWWWAuthenticate([]string{c})
		if err != nil || len(parsed) != 1 || parsed[0].Scheme != "bearer" || parsed[0].Params["resource_metadata"] != url {
			t.Errorf("%q parsed as %+v, %v", c, parsed, err)
		}
		if got := parsed[0].Params["error"]; (got == "invalid_token") != invalid {
			t.Errorf("%q: error=%q with invalidToken %v", c, got, invalid)
		}
	}
}
