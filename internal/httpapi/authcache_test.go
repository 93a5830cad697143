package httpapi_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/tokensdb"
)

// countingDirectory counts the reads that reach the store.
type countingDirectory struct {
	auth.Directory
	reads atomic.Int64
}

func (d *countingDirectory) TokenByHash(ctx context.Context, hash string) (auth.Token, error) {
	d.reads.Add(1)
	return d.Directory.TokenByHash(ctx, hash)
}

func (d *countingDirectory) Workspace(ctx context.Context, id string) (auth.Workspace, error) {
	d.reads.Add(1)
	return d.Directory.Workspace(ctx, id)
}

// A function instance remembers a token and its workspace for at most 5
// seconds: meanwhile a request reads neither, and 5 seconds after a token
// is revoked, or its workspace's API access disabled, the token is refused.
func TestAuthenticationIsRememberedAtMostFiveSeconds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	revoked := e.workspace("ws_rev", true)
	disabled := e.workspace("ws_off", true)
	dir := &countingDirectory{Directory: tokensdb.Directory(e.store)}
	a := auth.Authenticator{Dir: auth.NewCache(dir, e.clock)}
	for _, token := range []string{revoked, disabled} {
		if _, err := a.Authenticate(ctx, "Bearer "+token); err != nil {
			t.Fatalf("before the changes: %v", err)
		}
	}
	if n := dir.reads.Load(); n != 4 {
		t.Fatalf("%d reads for two tokens, want 4 (a token and its workspace each)", n)
	}

	changed := now.Add(time.Second)
	if err := tokensdb.New(e.store).RevokeToken(ctx, "ws_rev", "tok_ws_rev", changed); err != nil {
		t.Fatal(err)
	}
	if err := accountsdb.New(e.store).SetAPIEnabled(ctx, "ws_off", false); err != nil {
		t.Fatal(err)
	}
	e.clock.T = now.Add(auth.MaxCacheAge - time.Millisecond) // the records were read at now
	for _, token := range []string{revoked, disabled} {
		if _, err := a.Authenticate(ctx, "Bearer "+token); err != nil {
			t.Fatalf("within the cache's age: %v", err)
		}
	}
	if n := dir.reads.Load(); n != 4 {
		t.Errorf("%d reads after requests within 5 s, want still 4", n)
	}

	e.clock.T = changed.Add(auth.MaxCacheAge)
	if _, err := a.Authenticate(ctx, "Bearer "+revoked); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("revoked token 5 s after the revocation: %v, want ErrUnauthenticated", err)
	}
	if _, err := a.Authenticate(ctx, "Bearer "+disabled); !errors.Is(err, auth.ErrAPIDisabled) {
		t.Errorf("token of a workspace 5 s after its API access was disabled: %v, want ErrAPIDisabled", err)
	}
}

// An unknown token is not remembered: one created a moment later works at
// once.
func TestAuthenticationDoesNotRememberUnknownTokens(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := auth.Authenticator{Dir: auth.NewCache(tokensdb.Directory(e.store), e.clock)}
	token, hash := auth.NewToken()
	if _, err := a.Authenticate(ctx, "Bearer "+token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("unknown token: %v, want ErrUnauthenticated", err)
	}
	if err := tokensdb.New(e.store).CreateToken(ctx, auth.Token{ID: "tok_new", WorkspaceID: "ws_a", Hash: hash, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if p, err := a.Authenticate(ctx, "Bearer "+token); err != nil || p.WorkspaceID != "ws_a" {
		t.Errorf("the token once created: %+v, %v; want ws_a", p, err)
	}
}
