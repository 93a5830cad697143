package member

import (
	"testing"
	"time"
)

func TestASessionEndsIdleOrOld(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	s := Session{CreatedAt: t0, SeenAt: t0}
	if !s.Valid(t0.Add(IdleTimeout-time.Second)) || s.Valid(t0.Add(IdleTimeout)) {
		t.Error("a session unused for 12 hours must end then, not before")
	}
	s.SeenAt = t0.Add(MaxAge - time.Hour) // used all week
	if !s.Valid(t0.Add(MaxAge-time.Minute)) || s.Valid(t0.Add(MaxAge)) {
		t.Error("a session used all along must end 7 days after sign-in")
	}
}

func TestRolesAllowWhatTheyName(t *testing.T) {
	for _, c := range []struct {
		r                     Role
		tokens, money, people bool
	}{{Owner, true, true, true}, {Admin, true, false, false}, {Member, false, false, false}} {
		if c.r.ManagesTokens() != c.tokens || c.r.AddsBalance() != c.money || c.r.ManagesMembers() != c.people {
			t.Errorf("%s: tokens %v, balance %v, members %v", c.r, c.r.ManagesTokens(), c.r.AddsBalance(), c.r.ManagesMembers())
		}
	}
	if _, err := ParseRole("root"); err == nil {
		t.Error("an unknown role was accepted")
	}
}
