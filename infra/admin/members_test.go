package main

import (
	"context"
	"testing"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/awsclient"
	"genjobs/internal/clock"
	"genjobs/internal/cognito"
	"genjobs/internal/emulator"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/consoledb"
	"genjobs/internal/store/oauthdb"
	"genjobs/internal/testenv"
)

// TestMemberAddListRemove runs the member commands against a user pool in
// moto's Cognito: a new person gets a temporary password they can sign in
// with; the last owner cannot be removed.
func TestMemberAddListRemove(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if err := accountsdb.New(e.store()).CreateWorkspace(ctx, auth.Workspace{ID: "ws_acme", Name: "Acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	cfg := emulator.MotoConfig(testenv.MotoEndpoint())
	pool, err := cognito.CreatePool(ctx, cfg, testenv.UniqueName(t, "pool"))
	if err != nil {
		t.Fatal(err)
	}
	users, err := cognito.New(cfg, awsclient.Requests.Cognito, cognito.Config{PoolID: pool.PoolID, ClientID: pool.ClientID,
		JWKSURL: testenv.MotoEndpoint() + "/" + pool.PoolID + "/.well-known/jwks.json"}, cognito.VerifierOptions{Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result {
		c := &cli{clock: clock.System{}, getenv: func(string) string { return "" },
			target: &target{db: e.db, table: e.table, where: "in the test"}, users: users}
		return invoke(c, args...)
	}

	added := wantOK(t, run("member", "add", "--workspace", "ws_acme", "--email", "Ana@Example.com", "--role", "owner"), nil)
	wantKeys(t, added, "temporary_password", "user_id")
	res, err := users.SignIn(ctx, "ana@example.com", added["temporary_password"].(string))
	if err != nil || !res.NewPasswordRequired {
		t.Errorf("signing in with the temporary password: %+v %v; want the set-password step", res, err)
	}
	if _, err := users.SetNewPassword(ctx, "ana@example.com", res.Session, "Ana-Own-Password-1!"); err != nil {
		t.Fatal(err)
	}
	// Someone with an account already gets no temporary password.
	again := wantOK(t, run("member", "add", "--workspace", "ws_acme", "--email", "ana@example.com", "--role", "owner"), nil)
	wantKeys(t, again, "user_id")
	bo := wantOK(t, run("member", "add", "--workspace", "ws_acme", "--email", "bo@example.com", "--role", "member"), nil)["user_id"].(string)
	// Bo connected an assistant to ws_acme: removing Bo revokes it.
	grants := oauthdb.New(e.store())
	code, now := oauthdb.NewSecret(), time.Now()
	if err := grants.IssueCode(ctx, code, oauthdb.Code{ClientID: "oc_x", RedirectURI: "https://a.example/cb", UserID: bo, WorkspaceID: "ws_acme", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	boGrant := oauthdb.Grant{ID: oauthdb.NewID("gr_"), ClientID: "oc_x", UserID: bo, WorkspaceID: "ws_acme", CreatedAt: now}
	if err := grants.Redeem(ctx, code, boGrant, oauthdb.NewSecret(), now); err != nil {
		t.Fatal(err)
	}

	list := wantOK(t, run("member", "list", "--workspace", "ws_acme"), nil)
	ms := list["members"].([]any)
	if len(ms) != 2 || ms[0].(map[string]any)["email"] != "ana@example.com" || ms[0].(map[string]any)["role"] != "owner" {
		t.Errorf("member list: %v", list)
	}
	wantFail(t, run("member", "remove", "--workspace", "ws_acme", "--email", "ana@example.com"), 1, "last owner", nil)
	removed := wantOK(t, run("member", "remove", "--workspace", "ws_acme", "--email", "bo@example.com"), nil)
	if g, err := grants.Grant(ctx, boGrant.ID); err != nil || g.Live() || removed["connections_revoked"] != float64(1) {
		t.Errorf("after member remove: %v, Bo's connection %+v (%v); want it revoked, connections_revoked 1", removed, g, err)
	}
	wantFail(t, run("member", "remove", "--workspace", "ws_acme", "--email", "bo@example.com"), 1, "not a member", nil)
	wantFail(t, run("member", "add", "--workspace", "ws_acme", "--email", "x@example.com", "--role", "boss"), 2, "owner, admin or member", nil)
	wantFail(t, run("member", "add", "--workspace", "ws_acme", "--email", "not-an-email", "--role", "admin"), 2, "not an email", nil)
	wantFail(t, run("member", "add", "--workspace", "ws_nope", "--email", "x@example.com", "--role", "admin"), 1, "does not exist", nil)
}

// TestMemberResetPasswordRecoversAHalfAddedMember: the operator resets a
// member's password (a new temporary password, the old one void); a
// member whose user the pool lost gets a new user, the membership moved to
// it; a member added again before their first sign-in gets a new
// temporary password rather than none.
func TestMemberResetPasswordRecoversAHalfAddedMember(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if err := accountsdb.New(e.store()).CreateWorkspace(ctx, auth.Workspace{ID: "ws_acme", Name: "Acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	cfg := emulator.MotoConfig(testenv.MotoEndpoint())
	pool, err := cognito.CreatePool(ctx, cfg, testenv.UniqueName(t, "pool"))
	if err != nil {
		t.Fatal(err)
	}
	users, err := cognito.New(cfg, awsclient.Requests.Cognito, cognito.Config{PoolID: pool.PoolID, ClientID: pool.ClientID,
		JWKSURL: testenv.MotoEndpoint() + "/" + pool.PoolID + "/.well-known/jwks.json"}, cognito.VerifierOptions{Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result {
		c := &cli{clock: clock.System{}, getenv: func(string) string { return "" },
			target: &target{db: e.db, table: e.table, where: "in the test"}, users: users}
		return invoke(c, args...)
	}
	// The pool made the user, the membership was never written: added
	// again, they get a temporary password that works.
	if _, _, err := users.EnsureUser(ctx, "half@example.com"); err != nil {
		t.Fatal(err)
	}
	added := wantOK(t, run("member", "add", "--workspace", "ws_acme", "--email", "half@example.com", "--role", "owner"), nil)
	wantKeys(t, added, "temporary_password", "user_id")
	if r, err := users.SignIn(ctx, "half@example.com", added["temporary_password"].(string)); err != nil || !r.NewPasswordRequired {
		t.Errorf("the re-added member's temporary password: %+v %v", r, err)
	}
	if err := users.SetPassword(ctx, "half@example.com", "Own-Password-55!"); err != nil {
		t.Fatal(err)
	}
	reset := wantOK(t, run("member", "reset-password", "--workspace", "ws_acme", "--email", "Half@example.com"), nil)
	wantKeys(t, reset, "temporary_password", "user_id")
	if reset["user_id"] != added["user_id"] {
		t.Errorf("reset: user %v; want %v", reset["user_id"], added["user_id"])
	}
	if _, err := users.SignIn(ctx, "half@example.com", "Own-Password-55!"); err == nil {
		t.Error("the old password works after a reset")
	}
	if r, err := users.SignIn(ctx, "half@example.com", reset["temporary_password"].(string)); err != nil || !r.NewPasswordRequired {
		t.Errorf("the reset's temporary password: %+v %v", r, err)
	}
	// The membership was written, the pool has no such user.
	if err := consoledb.New(e.store()).AddMember(ctx, member.Membership{WorkspaceID: "ws_acme", UserID: "a-user-the-pool-lost",
		Email: "lost@example.com", Role: member.Admin, AddedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	lost := wantOK(t, run("member", "reset-password", "--workspace", "ws_acme", "--email", "lost@example.com"), nil)
	u, err := users.User(ctx, "lost@example.com")
	if err != nil || lost["user_id"] != u.UserID {
		t.Fatalf("reset of a lost user: %v; the pool's user %+v %v", lost, u, err)
	}
	list := wantOK(t, run("member", "list", "--workspace", "ws_acme"), nil)
	n := 0
	for _, m := range list["members"].([]any) {
		if m.(map[string]any)["email"] == "lost@example.com" {
			n++
			if m.(map[string]any)["user_id"] != u.UserID || m.(map[string]any)["role"] != "admin" {
				t.Errorf("the moved membership: %v", m)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d memberships of lost@example.com; want one", n)
	}
	wantFail(t, run("member", "reset-password", "--workspace", "ws_acme", "--email", "nobody@example.com"), 1, "not a member", nil)
	wantFail(t, run("member", "add", "--workspace", "ws_acme", "--email", "a&b@a.example", "--role", "member"), 2, "does not accept", nil)
}
