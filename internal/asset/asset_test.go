package asset_test

import (
	"fmt"
	"strings"
	"testing"

	"genjobs/internal/asset"
)

func TestNewIDIsValidAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := asset.NewID()
		if !asset.ValidID(id) || len(id) != 30 || !strings.HasPrefix(id, "ast_") {
			t.Fatalf("NewID() = %q; want ast_ and 26 base32 characters", id)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
	}
}

func TestValidIDRefuses(t *testing.T) {
	good := asset.NewID()
	for _, id := range []string{
		"",
		"ast_",
		good[:len(good)-1],
		good + "a",
		strings.ToUpper(good),
		"ast_" + strings.ToUpper(good[4:]),
		"job_" + good[4:],
		"ast_" + strings.Repeat("a", 25) + "1", // '1' is not base32
		"ast_" + strings.Repeat("a", 25) + "b", // trailing bits set: not a spelling NewID writes
		"ast_" + strings.Repeat("a", 24) + "/.",
		"0194b3a0-0000-7000-8000-000000000000",
	} {
		if asset.ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
	if !asset.ValidID("ast_" + strings.Repeat("a", 26)) {
		t.Error("the all-zero id is refused")
	}
}

func TestKeyAndURL(t *testing.T) {
	if got := asset.Key("ws_a", "ast_x"); got != "assets/ws_a/ast_x" {
		t.Errorf("Key = %q", got)
	}
	for _, base := range []string{"https://api.example.com", "https://api.example.com/"} {
		if got := asset.URL(base, "ast_x"); got != "https://api.example.com/assets/ast_x" {
			t.Errorf("URL(%q) = %q", base, got)
		}
	}
}

func TestIDFromURL(t *testing.T) {
	id := asset.NewID()
	cases := []struct {
		base, ref string
		ok        bool
	}{
		{"https://api.example.com", "https://api.example.com/assets/" + id, true},
		{"https://api.example.com/", "https://api.example.com/assets/" + id, true},
		{"https://api.example.com", "https://API.Example.com/assets/" + id, true},
		{"https://api.example.com", "http://api.example.com/assets/" + id, true},
		{"http://127.0.0.1:3000", "http://127.0.0.1:3000/assets/" + id, true},
		{"https://example.com/v1", "https://example.com/v1/assets/" + id, true},
		{"", "https://abc.execute-api.us-east-1.amazonaws.com/assets/" + id, true},
		{"", "http://127.0.0.1:3000/assets/" + id, true},

		{"https://api.example.com", "https://other.example.com/assets/" + id, false},
		{"http://127.0.0.1:3000", "http://127.0.0.1:3001/assets/" + id, false},
		{"https://example.com/v1", "https://example.com/assets/" + id, false},
		{"https://api.example.com", "https://api.example.com/assets/" + id + "/", false},
		{"https://api.example.com", "https://api.example.com/assets/" + id + "?x=1", false},
		{"https://api.example.com", "https://api.example.com/assets/" + id + "?", false},
		{"https://api.example.com", "https://api.example.com/assets/" + id + "#f", false},
		{"https://api.example.com", "https://u:p@api.example.com/assets/" + id, false},
		{"https://api.example.com", "https://api.example.com/assets%2F" + id, false},
		{"https://api.example.com", "https://api.example.com/x/assets/" + id, false},
		{"https://api.example.com", "https://api.example.com/assets/" + strings.ToUpper(id), false},
		{"https://api.example.com", "https://api.example.com/assets/ast_nope", false},
		{"https://api.example.com", "ftp://api.example.com/assets/" + id, false},
		{"https://api.example.com", "/assets/" + id, false},
		{"", "/assets/" + id, false},
		{"", "data:image/png;base64,iVBORw0KGgo=", false},
		{"", "https://example.com/images/" + id, false},
		{"", "https://example.com/v1/assets/" + id, false},
		{"", "https:///assets/" + id, false},
	}
	for _, c := range cases {
		got, ok := asset.IDFromURL(c.base, c.ref)
		if ok != c.ok || ok && got != id {
			t.Errorf("IDFromURL(%q, %q) = %q, %v; want ok %v", c.base, c.ref, got, ok, c.ok)
		}
	}
	// What URL writes, IDFromURL reads.
	for _, base := range []string{"https://api.example.com", "http://127.0.0.1:3000", "https://example.com/stage/"} {
		if got, ok := asset.IDFromURL(base, asset.URL(base, id)); !ok || got != id {
			t.Errorf("IDFromURL does not read back URL(%q, id)", base)
		}
	}
}

func TestValidContentType(t *testing.T) {
	for _, ct := range asset.ContentTypes {
		if !asset.ValidContentType(ct) {
			t.Errorf("%s refused", ct)
		}
	}
	for _, ct := range []string{"", "image/gif", "IMAGE/PNG", "image/png; charset=binary", "image/jpg", "application/octet-stream"} {
		if asset.ValidContentType(ct) {
			t.Errorf("%q accepted", ct)
		}
	}
}

func ExampleIDFromURL() {
	id := "ast_" + strings.Repeat("a", 26)
	fmt.Println(asset.IDFromURL("https://api.example.com", "https://api.example.com/assets/"+id))
	fmt.Println(asset.IDFromURL("https://api.example.com", "https://elsewhere.example.com/assets/"+id))
	// Without a configured base URL, any host will do.
	fmt.Println(asset.IDFromURL("", "https://elsewhere.example.com/assets/"+id))
	// Output:
	// ast_aaaaaaaaaaaaaaaaaaaaaaaaaa true
	//  false
	// ast_aaaaaaaaaaaaaaaaaaaaaaaaaa true
}
