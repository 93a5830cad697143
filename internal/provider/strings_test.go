package provider_test

import (
	"encoding/json"
	"slices"
	"testing"

	"genjobs/internal/provider"
	"genjobs/internal/provider/cog"
)

// A prediction's outputs are found wherever the model put them (a string, a
// list, an object of them, nested), in the same order every time: the
// URLs and data: URIs to copy, and (Cog without an upload store) the paths
// on the server's disk that cannot be.
func TestOutputsAndPathsAreFoundInAnyShape(t *testing.T) {
	output := json.RawMessage(`{"b": ["https://x.test/1.png", "/tmp/a.png", 3],
		"a": "data:image/png;base64,AA", "c": {"e": "file:///tmp/b.png", "d": "a caption"}}`)
	if got, want := provider.Outputs(output), []string{"data:image/png;base64,AA", "https://x.test/1.png"}; !slices.Equal(got, want) {
		t.Errorf("Outputs = %q; want %q", got, want)
	}
	if got, want := cog.Paths(output), []string{"/tmp/a.png", "file:///tmp/b.png"}; !slices.Equal(got, want) {
		t.Errorf("Paths = %q; want %q", got, want)
	}
	if got := provider.Outputs(json.RawMessage(`"http://x.test/only.gif"`)); !slices.Equal(got, []string{"http://x.test/only.gif"}) {
		t.Errorf("Outputs of a bare URL = %q", got)
	}
	for _, none := range []string{``, `null`, `{not json`, `42`, `[]`, `"http://x.test/a.png`, `["http://x.test/a.png"`,
		`"http://x.test/a.png" x`, `["http://x.test/a.png"] x`, `["http://x.test/a.png",]`} {
		if got := provider.Outputs(json.RawMessage(none)); got != nil {
			t.Errorf("Outputs(%q) = %q; want none", none, got)
		}
	}
	// A string or a list of strings is read in place when it decodes to
	// itself, and decoded otherwise: the same outputs either way.
	for raw, want := range map[string][]string{
		` [ "data:image/png;base64,AA" , "/tmp/a.png", "https://x.test/1.png" ] `: {"data:image/png;base64,AA", "https://x.test/1.png"},
		`"https:\/\/x.test\/1.png"`:              {"https://x.test/1.png"},
		`["https://x.test/é.png", "data:,a\"b"]`: {"https://x.test/é.png", `data:,a"b`},
		`["https://x.test/1.png", 3, null]`:      {"https://x.test/1.png"},
	} {
		if got := provider.Outputs(json.RawMessage(raw)); !slices.Equal(got, want) {
			t.Errorf("Outputs(%s) = %q; want %q", raw, got, want)
		}
	}
}
