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
	"genjobs/internal/store/accountsdb"
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
	// Someone with an account already gets no temporary password.
	again := wantOK(t, run("member", "add", "--workspace", "ws_acme", "--email", "ana@example.com", "--role", "owner"), nil)
	wantKeys(t, again, "user_id")
	wantOK(t, run("member", "add", "--workspace", "ws_acme", "--email", "bo@example.com", "--role", "member"), nil)

	list := wantOK(t, run("member", "list", "--workspace", "ws_acme"), nil)
	ms := list["members"].([]any)
	if len(ms) != 2 || ms[0].(map[string]any)["email"] != "ana@example.com" || ms[0].(map[string]any)["role"] != "owner" {
		t.Errorf("member list: %v", list)
	}
	wantFail(t, run("member", "remove", "--workspace", "ws_acme", "--email", "ana@example.com"), 1, "last owner", nil)
	wantOK(t, run("member", "remove", "--workspace", "ws_acme", "--email", "bo@example.com"), nil)
	wantFail(t, run("member", "remove", "--workspace", "ws_acme", "--email", "bo@example.com"), 1, "not a member", nil)
	wantFail(t, run("member", "add", "--workspace", "ws_acme", "--email", "x@example.com", "--role", "boss"), 2, "owner, admin or member", nil)
	wantFail(t, run("member", "add", "--workspace", "ws_acme", "--email", "not-an-email", "--role", "admin"), 2, "not an email", nil)
	wantFail(t, run("member", "add", "--workspace", "ws_nope", "--email", "x@example.com", "--role", "admin"), 1, "does not exist", nil)
}
