package cognito_test

import (
	"context"
	"errors"
	"testing"

	"genjobs/internal/awsclient"
	"genjobs/internal/clock"
	"genjobs/internal/cognito"
	"genjobs/internal/emulator"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newPool makes a pool in moto's Cognito and a client of it, the JWKS read
// where moto serves it.
func newPool(t *testing.T) (*cognito.Client, cognito.Pool) {
	t.Helper()
	ctx := context.Background()
	cfg := emulator.MotoConfig(testenv.MotoEndpoint())
	pool, err := cognito.CreatePool(ctx, cfg, testenv.UniqueName(t, "pool"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cognito.New(cfg, awsclient.Requests.Cognito, cognito.Config{PoolID: pool.PoolID, ClientID: pool.ClientID,
		JWKSURL: testenv.MotoEndpoint() + "/" + pool.PoolID + "/.well-known/jwks.json"}, cognito.VerifierOptions{Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	return c, pool
}

func TestAFirstSignInSetsAPasswordThenSignsIn(t *testing.T) {
	ctx := context.Background()
	c, _ := newPool(t)
	u, created, err := c.EnsureUser(ctx, "ada@example.com")
	if err != nil || !created || u.UserID == "" || u.TemporaryPassword == "" {
		t.Fatalf("EnsureUser: %+v %v %v", u, created, err)
	}
	// Added again before a first sign-in (the first add failed after the
	// pool made the user): a new temporary password, the first one void.
	again, created, err := c.EnsureUser(ctx, "ada@example.com")
	if err != nil || created || again.UserID != u.UserID || again.TemporaryPassword == "" || again.TemporaryPassword == u.TemporaryPassword {
		t.Fatalf("EnsureUser again: %+v %v %v; want the same user with a new temporary password", again, created, err)
	}
	if _, err := c.SignIn(ctx, "ada@example.com", u.TemporaryPassword); !errors.Is(err, cognito.ErrBadCredentials) {
		t.Fatalf("the first temporary password: %v; want ErrBadCredentials", err)
	}
	r, err := c.SignIn(ctx, "ada@example.com", again.TemporaryPassword)
	if err != nil || !r.NewPasswordRequired || r.Session == "" {
		t.Fatalf("first sign-in: %+v %v; want the set-password step", r, err)
	}
	r, err = c.SetNewPassword(ctx, "ada@example.com", r.Session, "Correct-Horse-42!")
	if err != nil || r.Identity.UserID != u.UserID || r.Identity.Email != "ada@example.com" {
		t.Fatalf("set password: %+v %v", r, err)
	}
	r, err = c.SignIn(ctx, "ada@example.com", "Correct-Horse-42!")
	if err != nil || r.Identity.UserID != u.UserID {
		t.Fatalf("sign-in: %+v %v", r, err)
	}
	// Once signed in, adding them again leaves their password alone.
	if again, _, err := c.EnsureUser(ctx, "ada@example.com"); err != nil || again.TemporaryPassword != "" {
		t.Fatalf("EnsureUser after the first sign-in: %+v %v; want no new password", again, err)
	}
}

func TestAWrongPasswordAndAnUnknownEmailFailAlike(t *testing.T) {
	ctx := context.Background()
	c, _ := newPool(t)
	if _, _, err := c.EnsureUser(ctx, "bo@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword(ctx, "bo@example.com", "Right-Password-1!"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][2]string{{"bo@example.com", "Wrong-Password-1!"}, {"nobody@example.com", "Right-Password-1!"}} {
		if _, err := c.SignIn(ctx, tc[0], tc[1]); !errors.Is(err, cognito.ErrBadCredentials) {
			t.Errorf("sign in %s: %v; want ErrBadCredentials", tc[0], err)
		}
	}
}
