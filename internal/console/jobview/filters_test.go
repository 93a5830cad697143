package jobview

import (
	"regexp"
	"strings"
	"testing"
)

// TestFilterChecksAcceptWhatTheirRegularExpressionsDid holds the plain
// checks of the endpoint and person filters to the regular expressions they
// replace, over every byte at the first, middle and last place of each
// part, parts of 0 to 129 characters, missing and extra parts, and
// multi-byte characters: a filter accepted or refused before is accepted or
// refused alike.
func TestFilterChecksAcceptWhatTheirRegularExpressionsDid(t *testing.T) {
	endpoint := regexp.MustCompile(`^/generate/[a-z0-9-]{1,64}/[a-z0-9-]{1,64}/[a-z0-9.-]{1,64}$`)
	person := regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	var parts []string
	specials := []string{"é", "\u2028", "\xff", "/", "A", "Z", "9", "_", ".", "-"}
	for _, l := range []int{0, 1, 2, 3, 63, 64, 65, 127, 128, 129} {
		base := strings.Repeat("a", l)
		parts = append(parts, base, base+"\n")
		for _, at := range []int{0, l / 2, l - 1} {
			if l == 0 {
				break
			}
			for b := 0; b < 256; b++ {
				parts = append(parts, base[:at]+string([]byte{byte(b)})+base[at+1:])
			}
			for _, sp := range specials {
				parts = append(parts, base[:at]+sp+base[at+1:])
			}
		}
	}
	n := 0
	check := func(name string, re *regexp.Regexp, ok func(string) bool, s string) {
		if want := re.MatchString(s); ok(s) != want && n < 10 {
			n++
			t.Errorf("%s %q: accepted %v, the regular expression %v", name, s, !want, want)
		}
	}
	for _, p := range parts {
		check("person", person, personID, p)
		for _, s := range []string{
			"/generate/" + p + "/vendor-b/model-e-4", "/generate/image/" + p + "/model-e-4", "/generate/image/vendor-b/" + p,
			"/generate/image/" + p, "/generate/image/vendor-b/model/" + p, "/generate/" + p, p + "/generate/image/vendor-b/model-e-4",
			"/Generate/image/vendor-b/" + p, "generate/image/vendor-b/" + p,
		} {
			check("endpoint", endpoint, endpointPath, s)
		}
	}
}
