package main

import (
	"testing"
	"time"

	"genjobs/internal/style"
)

// The walk check and the report count the styles the bench workspace sees
// by the bench's own mix; it must be the service's rule of who sees what.
func TestTheBenchsVisibleStylesAreTheServices(t *testing.T) {
	caller := style.APICaller(stylesWorkspace)
	base := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	visible := 0
	for i := range 40 {
		s, v := benchStyle(i, base)
		if got := caller.Visible(&s); got != v {
			t.Errorf("style %d (%s, owner %+v, public %v, approved %v): the bench says visible %v, the service %v",
				i, s.WorkspaceID, s.Owner, s.Public, s.Approved, v, got)
		}
		if v {
			visible++
		}
	}
	if visible != 28 {
		t.Errorf("%d of 40 styles visible, want 7 in 10 (the report's 7,000 of 10,000)", visible)
	}
}
