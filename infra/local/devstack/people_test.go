package devstack_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/cognito"
	"genjobs/internal/member"
	"genjobs/internal/store/membersdb"
)

// moto keeps its Cognito pool in memory: a restart of make run begins with
// an empty pool and the table of the run before. A person an owner added
// then can still sign in, with the temporary password make run prints, and
// is still a member of their workspaces.
func TestPeopleOfAnEarlierRunCanSignInAfterARestart(t *testing.T) {
	ctx := context.Background()
	s := devstacktest.Start(t)
	c, err := s.Local.Cognito()
	if err != nil {
		t.Fatal(err)
	}
	const email = "ana@example.com"
	before, _, err := c.EnsureUser(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	db := membersdb.New(s.Store)
	if err := db.AddMember(ctx, member.Membership{WorkspaceID: devstack.DemoWorkspace, UserID: before.UserID, Email: email,
		Role: member.Admin, AddedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	// The restart: moto's new, empty pool; the same table.
	s.Local.Pool = cognito.Pool{}
	if err := s.Local.ProvisionConsole(ctx); err != nil {
		t.Fatal(err)
	}
	c, err = s.Local.Cognito()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "people.json")
	restored, err := s.Local.RestorePeople(ctx, s.Store, file)
	if err != nil {
		t.Fatal(err)
	}
	if len(restored) != 1 || restored[0].Email != email || restored[0].TemporaryPassword == "" {
		t.Fatalf("restored %+v; want %s with a temporary password", restored, email)
	}
	var written []devstack.Restored
	if b, err := os.ReadFile(file); err != nil || json.Unmarshal(b, &written) != nil || len(written) != 1 || written[0] != restored[0] {
		t.Fatalf("people.json: %s %v", b, err)
	}

	r, err := c.SignIn(ctx, email, restored[0].TemporaryPassword)
	if err != nil || !r.NewPasswordRequired {
		t.Fatalf("sign in with the printed password: %+v %v; want the set-password step", r, err)
	}
	r, err = c.SetNewPassword(ctx, email, r.Session, "Ana-New-Password-1!")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := db.Memberships(ctx, r.Identity.UserID)
	if err != nil || len(ms) != 1 || ms[0].WorkspaceID != devstack.DemoWorkspace || ms[0].Role != member.Admin {
		t.Fatalf("the signed-in person's memberships: %+v %v; want admin of %s", ms, err, devstack.DemoWorkspace)
	}
	if old, _ := db.Memberships(ctx, before.UserID); len(old) != 0 {
		t.Errorf("the earlier user id keeps %d memberships", len(old))
	}
	// A second restart of the same table finds them moved: nobody twice.
	again, err := s.Local.RestorePeople(ctx, s.Store, file)
	if err != nil || len(again) != 0 {
		t.Fatalf("restore again on the same pool: %+v %v; want nobody", again, err)
	}
}
