package authserver

import (
	"regexp"
	"strings"
	"testing"
)

// TestPKCEChecksAcceptWhatTheirRegularExpressionsDid holds the plain checks
// of code_challenge and code_verifier to the regular expressions they
// replace, over every byte at the first, middle and last place of strings
// of every length up to past the longest allowed, and over multi-byte
// characters: a challenge or verifier accepted or refused before is
// accepted or refused alike.
func TestPKCEChecksAcceptWhatTheirRegularExpressionsDid(t *testing.T) {
	for _, c := range []struct {
		name  string
		re    *regexp.Regexp
		check func(string) bool
	}{
		{"code_challenge", regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`), codeChallenge},
		{"code_verifier", regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`), codeVerifier},
	} {
		n := 0
		for _, s := range edgeStrings(130) {
			if want := c.re.MatchString(s); c.check(s) != want {
				t.Errorf("%s %q (%d bytes): accepted %v, the regular expression %v", c.name, s, len(s), !want, want)
				if n++; n == 10 {
					break
				}
			}
		}
	}
}

// edgeStrings are strings of 0 to maxLen characters of a valid kind with
// each byte, then each of a few multi-byte characters, put first, in the
// middle and last, and the valid ones with a newline after.
func edgeStrings(maxLen int) []string {
	var out []string
	specials := []string{"é", "\u2028", "\ufffd", "\xff\xfe", "~", ".", "_", "-", "Z", "9"}
	for l := 0; l <= maxLen; l++ {
		base := strings.Repeat("a", l)
		out = append(out, base, base+"\n", "\n"+base)
		if l == 0 {
			continue
		}
		for _, at := range []int{0, l / 2, l - 1} {
			for b := 0; b < 256; b++ {
				out = append(out, base[:at]+string([]byte{byte(b)})+base[at+1:])
			}
			for _, s := range specials {
				out = append(out, base[:at]+s+base[at+1:])
			}
		}
	}
	return out
}
