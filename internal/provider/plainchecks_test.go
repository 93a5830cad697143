package provider

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestRouteNamesCheckedAsTheRegularExpressionsDid holds the plain checks of
// a route's model, version and input names, and of an upload's file name,
// to the regular expressions they replace, over every byte at the first, middle and last place of each
// segment, slashes anywhere, and multi-byte characters: a routes document
// or an upload accepted or refused before is accepted or refused alike.
func TestRouteNamesCheckedAsTheRegularExpressionsDid(t *testing.T) {
	for _, c := range []struct {
		name  string
		re    *regexp.Regexp
		check func(string) bool
	}{
		{"model", regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*$`), modelName},
		{"fal model", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$`), falModel},
		{"version", regexp.MustCompile(`^[0-9a-f]{64}$`), versionID},
		{"input name", regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`), inputName},
		{"upload name", regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$`), uploadName},
	} {
		n := 0
		for _, s := range nameEdges() {
			if want := c.re.MatchString(s); c.check(s) != want {
				t.Errorf("%s %q: accepted %v, the regular expression %v", c.name, s, !want, want)
				if n++; n == 10 {
					break
				}
			}
		}
	}
}

// nameEdges are strings of one to four segments, joined by '/', of 0 to 201
// characters, with each byte and a few multi-byte characters put first, in
// the middle and last of one segment, and with a newline after.
func nameEdges() []string {
	var out []string
	specials := []string{"é", "\u2028", "\xff", "//", "A", "Z", "9", "_", "."}
	bases := []string{"", "a", "ab", "abc", strings.Repeat("0", 63), strings.Repeat("f", 64), strings.Repeat("a", 65), "a/b", "a/b/c",
		strings.Repeat("b", 199), strings.Repeat("b", 200), strings.Repeat("b", 201)}
	for _, base := range bases {
		for _, prefix := range []string{"", "o/", "o/p/"} {
			for _, suffix := range []string{"", "/n", "/n/p"} {
				s := prefix + base + suffix
				out = append(out, s, s+"\n", "\n"+s)
				if base == "" {
					for b := 0; b < 256; b++ {
						out = append(out, prefix+string([]byte{byte(b)})+suffix)
					}
					continue
				}
				for _, at := range []int{0, len(base) / 2, len(base) - 1} {
					for b := 0; b < 256; b++ {
						out = append(out, prefix+base[:at]+string([]byte{byte(b)})+base[at+1:]+suffix)
					}
					for _, sp := range specials {
						out = append(out, prefix+base[:at]+sp+base[at+1:]+suffix)
					}
				}
			}
		}
	}
	// Random strings over the characters the patterns tell apart.
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ09_.-/\n"
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		out = append(out, string(b))
	}
	return out
}

// TestProgressReadsWhatTheRegularExpressionDid holds Progress to the last
// match of the regular expression it replaces, (\d{1,3})%\|, over tqdm's
// bars, digits runs of every length before "%|", and random strings of the
// characters the pattern tells apart: a job's reported progress is the same.
func TestProgressReadsWhatTheRegularExpressionDid(t *testing.T) {
	percent := regexp.MustCompile(`(\d{1,3})%\|`)
	old := func(logs string) *float64 {
		m := percent.FindAllStringSubmatch(logs, -1)
		if len(m) == 0 {
			return nil
		}
		n := 0
		for _, c := range m[len(m)-1][1] {
			n = 10*n + int(c-'0')
		}
		if n > 100 {
			return nil
		}
		p := float64(n) / 100
		return &p
	}
	logs := []string{
		"", "%|", "5%|", "45%|####   | 45/100", "100%|##########| 100/100", "101%|", "1000%|", "0100%|", "12345%|",
		"50%|#####     | 50/100\n60%|######    | 60/100\n", "60%|\nabc%|", "60%|\n%|", "60%|\n7%", "7%|x%|", "٣%|", "5%|%|",
		"done 99%|\r100%|", "9%|9%|", "%|%|%|", "1%|2", "99%| 100%", "abc 7%|" + strings.Repeat("x", 10000),
	}
	for d := 0; d < 6; d++ {
		logs = append(logs, strings.Repeat("9", d)+"%|", "x"+strings.Repeat("1", d)+"%|y", strings.Repeat("0", d)+"7%|")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "0159%|a\n"
	for range 50000 {
		b := make([]byte, rng.IntN(16))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		logs = append(logs, string(b))
	}
	n := 0
	for _, l := range logs {
		got, want := Progress(l), old(l)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("Progress(%q) = %v, the regular expression's %v", l, show(got), show(want))
			if n++; n == 10 {
				break
			}
		}
	}
}

func show(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
