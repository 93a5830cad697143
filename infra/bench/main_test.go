package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// The command line: a subcommand runs one part and takes no flags; the
// whole run takes the soak's flags, in range.
func TestParseArgs(t *testing.T) {
	defaults := soakOptions{d: defaultSoakFor, rate: defaultSoakRate}
	for _, c := range []struct {
		args []string
		sub  string
		so   soakOptions
		err  error
	}{
		{nil, "", defaults, nil},
		{[]string{"enhance"}, "enhance", soakOptions{}, nil},
		{[]string{"starts"}, "starts", soakOptions{}, nil},
		{[]string{"creation"}, "creation", soakOptions{}, nil},
		{[]string{"styles"}, "styles", soakOptions{}, nil},
		{[]string{"cost", "-soak", "nonsense"}, "cost", soakOptions{}, nil},
		{[]string{"-soak", "30s", "-soak-rate", "20"}, "", soakOptions{d: 30 * time.Second, rate: 20}, nil},
		{[]string{"-soak", "0"}, "", soakOptions{rate: defaultSoakRate}, nil},
		{[]string{"-soak-only", "-soak", "5s"}, "", soakOptions{d: 5 * time.Second, rate: defaultSoakRate, only: true}, nil},
		{[]string{"-soak-rate", "1000"}, "", soakOptions{d: defaultSoakFor, rate: 1000}, nil},
		{[]string{"-soak-only", "-soak", "0"}, "", soakOptions{}, errSoakFlags},
		{[]string{"-soak-rate", "0"}, "", soakOptions{}, errSoakFlags},
		{[]string{"-soak-rate", "1001"}, "", soakOptions{}, errSoakFlags},
		{[]string{"-soak", "-1s"}, "", soakOptions{}, errSoakFlags},
		{[]string{"-h"}, "", soakOptions{}, flag.ErrHelp},
	} {
		sub, so, err := parseArgs(c.args, io.Discard)
		if !errors.Is(err, c.err) {
			t.Errorf("%q: error %v, want %v", c.args, err, c.err)
			continue
		}
		if err == nil && (sub != c.sub || so != c.so) {
			t.Errorf("%q: %q %+v, want %q %+v", c.args, sub, so, c.sub, c.so)
		}
	}
}

func TestAnUnknownFlagShowsTheUsage(t *testing.T) {
	var out strings.Builder
	_, _, err := parseArgs([]string{"-soke", "1s"}, &out)
	if err == nil || errors.Is(err, errSoakFlags) {
		t.Fatalf("error %v, want the flag package's", err)
	}
	for _, want := range []string{"flag provided but not defined: -soke", "bench enhance", "-soak-rate"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the usage lacks %q:\n%s", want, out.String())
		}
	}
}
