package job

import (
	"encoding/json"
	"regexp"
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

func TestStatusMovesOnlyForward(t *testing.T) {
	cases := []struct {
		from, to Status
		ok       bool
	}{
		{Backlogged, Queued, true},
		{Queued, Processing, true},
		{Processing, Queued, false},
		{Sampling, Sampling, false},
		{IntermediateComplete, Completed, true},
		{Backlogged, Cancelled, true},
		{Queued, Failed, true},
		{Completed, Failed, false},
		{Cancelled, Completed, false},
	}
	for _, c := range cases {
		if got := c.from.CanMoveTo(c.to); got != c.ok {
			t.Errorf("%s -> %s allowed = %v; want %v", c.from, c.to, got, c.ok)
		}
	}
}

func TestCreationRecordHasExactlyTheSpecFields(t *testing.T) {
	created := time.Date(2026, 11, 21, 20, 33, 0, 0, time.UTC)
	j := Job{ID: "0194b3a0-1c2d-7e3f-8a4b-5c6d7e8f9a0b", Status: Queued, CreatedAt: created}
	b, err := json.Marshal(j.Record())
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
		s := At(time.Date(2026, 1, 2, 3, 4, 5, ns, time.FixedZone("x", 3600))).String()
		if !re.MatchString(s) {
			t.Errorf("At(...).String() = %q", s)
		}
	}
}
