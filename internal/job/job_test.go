package job

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewIDIsAValidVersion7UUID(t *testing.T) {
	now := time.Date(2026, 11, 21, 20, 33, 0, 120e6, time.UTC)
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID(now)
		if !ValidID(id) || id[14] != '7' {
			t.Fatalf("NewID() = %q: not a version 7 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
	if later := NewID(now.Add(time.Millisecond)); later < NewID(now) {
		t.Errorf("an id of a later millisecond sorts first: %s", later)
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0b": true,
		"0194b3a0-1c2d-4e3f-bf4b-5c6d7e8f9a0b": true,
		"00000000-0000-0000-0000-000000000000": true,
		"ffffffff-ffff-ffff-ffff-ffffffffffff": true,
		"0194b3a0-1c2d-9e3f-8a4b-5c6d7e8f9a0b": false, // version 9
		"0194b3a0-1c2d-7e3f-ca4b-5c6d7e8f9a0b": false, // variant c
		"0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0":  false,
		"0194b3a01c2d-7e3f-8a4b-5c6d7e8f9a0b0": false,
		"../../etc/passwd":                     false,
		"":                                     false,
	} {
		if got := ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v; want %v", id, got, want)
		}
	}
}

// TestEveryTransition checks every pair of statuses against the rules of
// docs/api.md ("Statuses"), written out here rather than derived.
func TestEveryTransition(t *testing.T) {
	allowed := map[Status][]Status{
		Backlogged:           {Queued, Failed, Cancelled},
		Queued:               {Scheduled, Processing, Sampling, IntermediateComplete, Completed, Failed, Cancelled},
		Scheduled:            {Processing, Sampling, IntermediateComplete, Completed, Failed, Cancelled},
		Processing:           {Sampling, IntermediateComplete, Completed, Failed, Cancelled},
		Sampling:             {IntermediateComplete, Completed, Failed, Cancelled},
		IntermediateComplete: {Completed, Failed, Cancelled},
		Completed:            nil,
		Failed:               nil,
		Cancelled:            nil,
	}
	pairs := 0
	for _, from := range Statuses {
		for _, to := range Statuses {
			want := slices.Contains(allowed[from], to)
			if got := from.CanMoveTo(to); got != want {
				t.Errorf("%s -> %s allowed = %v; want %v", from, to, got, want)
			}
			if got := slices.Contains(to.From(), from); got != want {
				t.Errorf("%s.From() contains %s = %v; want %v", to, from, got, want)
			}
			pairs++
		}
	}
	if pairs != 81 {
		t.Errorf("checked %d pairs; want all 81", pairs)
	}
}

func TestRunningSlots(t *testing.T) {
	for _, s := range Statuses {
		want := s == Queued || s == Scheduled || s == Processing || s == Sampling || s == IntermediateComplete
		if s.Running() != want {
			t.Errorf("%s.Running() = %v; want %v", s, s.Running(), want)
		}
	}
}

func TestRecordShowsOutputsAsURLs(t *testing.T) {
	done := time.Date(2026, 11, 21, 20, 34, 0, 5e6, time.UTC)
	p := 1.0
	j := Job{ID: "0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0b", Status: Completed, CreatedAt: done.Add(-time.Minute),
		CompletedAt: &done, Outputs: []string{"results/x/0.png"}, Progress: &p}
	b, err := marshal(j.Record([]string{"https://s3.example/x/0.png?a=1&sig=1"})) // as the API writes it
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job_id":"0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0b","status":"completed","created_at":"2026-11-21T20:33:00.005Z","completed_at":"2026-11-21T20:34:00.005Z","result":{"urls":["https://s3.example/x/0.png?a=1&sig=1"]},"progress":1}`
	if string(b) != want {
		t.Errorf("record = %s\nwant     %s", b, want)
	}
}

func TestAnEndedJobWithoutOutputShowsNoPreview(t *testing.T) {
	for _, st := range []Status{Failed, Cancelled} {
		j := Job{ID: "0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0b", Status: st, Outputs: []string{"results/x/preview.png"}}
		if r := j.Record([]string{"https://s3.example/preview.png"}); r.Result != nil {
			t.Errorf("%s job shows result %s; want null", st, r.Result)
		}
	}
}

func TestModelIsTheEndpointsLastSegment(t *testing.T) {
	j := Job{Endpoint: "/generate/3d/vendor-g/model-g-3.1-rapid"}
	if got := j.Model(); got != "model-g-3.1-rapid" {
		t.Errorf("Model() = %q", got)
	}
}

func TestCreationRecordHasExactlyTheSpecFields(t *testing.T) {
	created := time.Date(2026, 11, 21, 20, 33, 0, 0, time.UTC)
	j := Job{ID: "0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0b", Status: Queued, CreatedAt: created}
	b, err := json.Marshal(j.Record(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job_id":"0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0b","status":"queued","created_at":"2026-11-21T20:33:00.000Z","completed_at":null,"result":null,"progress":null}`
	if string(b) != want {
		t.Errorf("record = %s\nwant     %s", b, want)
	}
}

func TestTimeHasThreeFractionalDigits(t *testing.T) {
	re := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, ns := range []int{0, 120e6, 999999999, 1} {
		s := TimeOf(time.Date(2026, 1, 2, 3, 4, 5, ns, time.FixedZone("x", 3600))).String()
		if !re.MatchString(s) {
			t.Errorf("TimeOf(...).String() = %q", s)
		}
	}
}

func TestRecordShowsProgressToFourDecimals(t *testing.T) {
	for _, c := range []struct {
		stored float64
		want   string
	}{
		{0.36796000000000006, `"progress":0.368`}, // an engine's sum of shares
		{0.1 + 0.2, `"progress":0.3`},
		{0.12345, `"progress":0.1235`},
		{0.99996, `"progress":0.9999`}, // short of completion never shows 1
		{0, `"progress":0`},
		{1, `"progress":1`},
	} {
		p := c.stored
		j := Job{ID: "0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0b", Status: Sampling, Progress: &p}
		if c.stored == 1 {
			j.Status = Completed
		}
		b, err := json.Marshal(j.Record(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) {
			t.Errorf("progress %v: record = %s; want %s", c.stored, b, c.want)
		}
	}
}
