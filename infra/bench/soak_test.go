package main

import (
	"net/http"
	"strings"
	"testing"
)

// The soak finds DynamoDB Local and fauxqs among the runner's children by
// their /proc/<pid>/stat, whose command name may hold spaces and ')'.
func TestParseStatReadsTheCommandAndItsParent(t *testing.T) {
	for _, c := range []struct {
		stat, comm string
		ppid       int
		ok         bool
	}{
		{"4242 (java) S 17 4242 4242 0 -1 4194560 1000", "java", 17, true},
		{"77 (node worker (x)) R 9 1 1 0", "node worker (x)", 9, true},
		{"77 (node) R", "", 0, false},
		{"77 node R 9", "", 0, false},
		{"77 (node) R x 1", "", 0, false},
	} {
		comm, ppid, ok := parseStat(c.stat)
		if comm != c.comm || ppid != c.ppid || ok != c.ok {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, %v", c.stat, comm, ppid, ok, c.comm, c.ppid, c.ok)
		}
	}
}

func TestVmRSSIsInBytes(t *testing.T) {
	status := "Name:\tjava\nVmPeak:\t  9000000 kB\nVmRSS:\t  123456 kB\nThreads:\t40\n"
	if got := vmRSS(status); got != 123456*1024 {
		t.Errorf("vmRSS = %d, want %d", got, 123456*1024)
	}
	if got := vmRSS("Name:\tzombie\nThreads:\t1\n"); got != 0 {
		t.Errorf("no VmRSS line: %d, want 0", got)
	}
}

// The soak's mix is what its footnote says: per ten requests one creation
// (the two cheap models in turn), four lists and five reads of a job it
// created.
func TestTheSoakSendsItsMix(t *testing.T) {
	jobs := []string{"j1", "j2", "j3"}
	kinds := map[string]int{}
	var models []string
	for n := range 3 * len(soakMix) {
		method, path, body := soakRequest(n, jobs)
		switch {
		case method == http.MethodPost:
			kinds["create"]++
			models = append(models, path)
			if body == "" {
				t.Errorf("request %d: a creation without a body", n)
			}
		case path == "/jobs?limit=20":
			kinds["list"]++
		case strings.HasPrefix(path, "/jobs/j"):
			kinds["get"]++
		default:
			t.Errorf("request %d: %s %s", n, method, path)
		}
	}
	if kinds["create"] != 3 || kinds["list"] != 12 || kinds["get"] != 15 {
		t.Errorf("30 requests: %v, want 3 creations, 12 lists, 15 reads", kinds)
	}
	if len(models) != 3 || models[0] != soakBodies[0].path || models[1] != soakBodies[1].path || models[2] != soakBodies[0].path {
		t.Errorf("creations %v, want the two models in turn", models)
	}
	if count(soakMix, "create") != 1 || count(soakMix, "list") != 4 || count(soakMix, "get") != 5 {
		t.Errorf("the footnote's shares: %v", soakMix)
	}
	for n, k := range soakMix {
		if k != "get" {
			continue
		}
		if _, path, _ := soakRequest(n, nil); path != "/jobs?limit=1" {
			t.Errorf("a read before any job exists: %s, want /jobs?limit=1", path)
		}
	}
}
