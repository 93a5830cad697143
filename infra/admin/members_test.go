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
	"genjobs/internal/store/membersdb"
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
	if err := membersdb.New(e.store()).AddMember(ctx, member.Membership{WorkspaceID: "ws_acme", UserID: "a-user-the-pool-lost",
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

// TestMemberDisableRevokesEveryConnectionAndEnableLetsThemSignInAgain: a
// disabled person cannot sign in, their refresh token is void, and their
// MCP connections in every workspace are revoked (no one else's); a rerun
// succeeds with nothing left to revoke; enabled, they sign in again and
// their connections stay revoked.
func TestMemberDisableRevokesEveryConnectionAndEnableLetsThemSignInAgain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for _, ws := range []string{"ws_acme", "ws_beta"} {
		if err := accountsdb.New(e.store()).CreateWorkspace(ctx, auth.Workspace{ID: ws, Name: ws, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
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
	bo := wantOK(t, run("member", "add", "--workspace", "ws_acme", "--email", "bo@example.com", "--role", "owner"), nil)["user_id"].(string)
	wantOK(t, run("member", "add", "--workspace", "ws_beta", "--email", "bo@example.com", "--role", "member"), nil)
	cy := wantOK(t, run("member", "add", "--workspace", "ws_acme", "--email", "cy@example.com", "--role", "member"), nil)["user_id"].(string)
	const pw = "Bo-Own-Password-1!"
	if err := users.SetPassword(ctx, "bo@example.com", pw); err != nil {
		t.Fatal(err)
	}
	in, err := users.SignIn(ctx, "bo@example.com", pw)
	if err != nil || in.Tokens.Refresh == "" {
		t.Fatalf("Bo's sign-in: %+v %v", in, err)
	}
	grants := oauthdb.New(e.store())
	connect := func(user, ws string) string {
		code, now := oauthdb.NewSecret(), time.Now()
		if err := grants.IssueCode(ctx, code, oauthdb.Code{ClientID: "oc_x", RedirectURI: "https://a.example/cb", UserID: user, WorkspaceID: ws, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		g := oauthdb.Grant{ID: oauthdb.NewID("gr_"), ClientID: "oc_x", ClientName: "Assistant", UserID: user, WorkspaceID: ws, CreatedAt: now}
		if err := grants.Redeem(ctx, code, g, oauthdb.NewSecret(), now); err != nil {
			t.Fatal(err)
		}
		return g.ID
	}
	boAcme, boBeta, cyAcme := connect(bo, "ws_acme"), connect(bo, "ws_beta"), connect(cy, "ws_acme")
	live := func(id string) bool {
		t.Helper()
		g, err := grants.Grant(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return g.Live()
	}

	out := wantOK(t, run("member", "disable", "--email", "Bo@Example.com"), nil)
	if out["user_id"] != bo || out["disabled"] != true || out["connections_revoked"] != float64(2) || len(out["connections"].([]any)) != 2 {
		t.Errorf("member disable: %v; want Bo disabled, 2 connections revoked", out)
	}
	if live(boAcme) || live(boBeta) || !live(cyAcme) {
		t.Errorf("after disable: Bo's connections live %v %v, Cy's %v; want Bo's revoked, Cy's live", live(boAcme), live(boBeta), live(cyAcme))
	}
	if p, err := users.Person(ctx, "bo@example.com"); err != nil || p.Enabled {
		t.Errorf("Bo in the pool after disable: %+v %v; want disabled", p, err)
	}
	if _, err := users.SignIn(ctx, "bo@example.com", pw); err == nil {
		t.Error("a disabled person signed in")
	}
	if _, err := users.Refresh(ctx, in.Tokens.Refresh); err == nil {
		t.Error("a disabled person's refresh token still works")
	}
	again := wantOK(t, run("member", "disable", "--email", "bo@example.com"), nil)
	if again["disabled"] != true || again["connections_revoked"] != float64(0) {
		t.Errorf("member disable again: %v; want disabled, nothing left to revoke", again)
	}

	wantKeys(t, wantOK(t, run("member", "enable", "--email", "bo@example.com"), nil), "enabled", "user_id")
	if _, err := users.SignIn(ctx, "bo@example.com", pw); err != nil {
		t.Errorf("an enabled person cannot sign in: %v", err)
	}
	if live(boAcme) || live(boBeta) {
		t.Error("enabling brought a revoked connection back")
	}
	wantOK(t, run("member", "enable", "--email", "bo@example.com"), nil)

	wantFail(t, run("member", "disable", "--email", "nobody@example.com"), 1, "has no user", nil)
	wantFail(t, run("member", "enable", "--email", "nobody@example.com"), 1, "has no user", nil)
	wantFail(t, run("member", "disable"), 2, "--email is required", nil)
}
