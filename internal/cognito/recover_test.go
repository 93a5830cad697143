package cognito_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"genjobs/internal/awsclient"
	"genjobs/internal/clock"
	"genjobs/internal/cognito"
	"genjobs/internal/emulator"
	"genjobs/internal/testenv"
)

// codes records the reset codes moto's ForgotPassword answers in a header
// of its own (it sends no email).
type codes struct {
	mu   sync.Mutex
	last string
}

func (c *codes) Do(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		if code := resp.Header.Get("x-moto-forgot-password-confirmation-code"); code != "" {
			c.mu.Lock()
			c.last = code
			c.mu.Unlock()
		}
	}
	return resp, err
}

func (c *codes) code() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// newPoolWithCodes is newPool whose client records the reset codes.
func newPoolWithCodes(t *testing.T) (*cognito.Client, *codes) {
	t.Helper()
	ctx := context.Background()
	cfg := emulator.MotoConfig(testenv.MotoEndpoint())
	pool, err := cognito.CreatePool(ctx, cfg, testenv.UniqueName(t, "pool"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &codes{}
	cfg.HTTPClient = rec
	c, err := cognito.New(cfg, awsclient.Requests.Cognito, cognito.Config{PoolID: pool.PoolID, ClientID: pool.ClientID,
		JWKSURL: testenv.MotoEndpoint() + "/" + pool.PoolID + "/.well-known/jwks.json"}, cognito.VerifierOptions{Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func TestAForgottenPasswordIsResetWithTheEmailedCode(t *testing.T) {
	ctx := context.Background()
	c, rec := newPoolWithCodes(t)
	if _, _, err := c.EnsureUser(ctx, "cy@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword(ctx, "cy@example.com", "Forgotten-Pass-1!"); err != nil {
		t.Fatal(err)
	}
	if err := c.ForgotPassword(ctx, "cy@example.com"); err != nil {
		t.Fatalf("ForgotPassword: %v", err)
	}
	code := rec.code()
	if !strings.HasPrefix(code, "moto-confirmation-code:") {
		t.Fatalf("moto sent the code %q", code)
	}
	wrong := "moto-confirmation-code:000000"
	if err := c.ConfirmForgotPassword(ctx, "cy@example.com", wrong, "Another-Pass-22!"); !errors.Is(err, cognito.ErrCodeExpired) && !errors.Is(err, cognito.ErrCodeMismatch) {
		t.Fatalf("a wrong code: %v; want a code error", err)
	}
	if err := c.ConfirmForgotPassword(ctx, "cy@example.com", code, "New-Password-33!"); err != nil {
		t.Fatalf("ConfirmForgotPassword: %v", err)
	}
	if _, err := c.SignIn(ctx, "cy@example.com", "Forgotten-Pass-1!"); !errors.Is(err, cognito.ErrBadCredentials) {
		t.Errorf("the old password: %v; want ErrBadCredentials", err)
	}
	if r, err := c.SignIn(ctx, "cy@example.com", "New-Password-33!"); err != nil || r.Identity.Email != "cy@example.com" {
		t.Errorf("the new password: %+v %v", r, err)
	}
}

// An address without an account gets the same answer as one with, at
// both steps.
func TestForgotPasswordTellsNobodyWhichAddressesHaveAccounts(t *testing.T) {
	ctx := context.Background()
	c, _ := newPoolWithCodes(t)
	if err := c.ForgotPassword(ctx, "nobody@example.com"); err != nil {
		t.Errorf("ForgotPassword of an unknown address: %v; want nil, as for a known one", err)
	}
	if err := c.ConfirmForgotPassword(ctx, "nobody@example.com", "moto-confirmation-code:123456", "New-Password-33!"); !errors.Is(err, cognito.ErrCodeMismatch) {
		t.Errorf("ConfirmForgotPassword of an unknown address: %v; want ErrCodeMismatch", err)
	}
}

// An address the pool refuses as a user name (moto, as Cognito, refuses
// a&b@a.example) is ErrInvalidEmail, not an internal error.
func TestAnAddressThePoolRefusesIsInvalidEmail(t *testing.T) {
	c, _ := newPool(t)
	if _, _, err := c.EnsureUser(context.Background(), "a&b@a.example"); !errors.Is(err, cognito.ErrInvalidEmail) {
		t.Errorf("EnsureUser(a&b@a.example): %v; want ErrInvalidEmail", err)
	}
}

// A forged set-password session is ErrChallengeExpired: sign in again.
func TestAForgedChallengeSessionMeansSignInAgain(t *testing.T) {
	ctx := context.Background()
	c, _ := newPool(t)
	u, _, err := c.EnsureUser(ctx, "di@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SignIn(ctx, "di@example.com", u.TemporaryPassword); err != nil {
		t.Fatal(err)
	}
	for _, session := range []string{"forged", strings.Repeat("A", 40), "x.y.z"} {
		if _, err := c.SetNewPassword(ctx, "di@example.com", session, "Correct-Horse-42!"); !errors.Is(err, cognito.ErrChallengeExpired) {
			t.Errorf("session %q: %v; want ErrChallengeExpired", session, err)
		}
	}
}

// An owner's reset gives a new temporary password; a user the pool lost
// is made again, with a new id.
func TestAResetGivesANewTemporaryPasswordAndRecoversALostUser(t *testing.T) {
	ctx := context.Background()
	c, _ := newPool(t)
	u, _, err := c.EnsureUser(ctx, "ed@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword(ctx, "ed@example.com", "Own-Password-44!"); err != nil {
		t.Fatal(err)
	}
	reset, err := c.ResetPassword(ctx, "ed@example.com")
	if err != nil || reset.UserID != u.UserID || reset.TemporaryPassword == "" {
		t.Fatalf("ResetPassword: %+v %v", reset, err)
	}
	if _, err := c.SignIn(ctx, "ed@example.com", "Own-Password-44!"); !errors.Is(err, cognito.ErrBadCredentials) {
		t.Errorf("the old password after a reset: %v; want ErrBadCredentials", err)
	}
	if r, err := c.SignIn(ctx, "ed@example.com", reset.TemporaryPassword); err != nil || !r.NewPasswordRequired {
		t.Errorf("the temporary password: %+v %v; want the set-password step", r, err)
	}
	lost, err := c.ResetPassword(ctx, "lost@example.com")
	if err != nil || lost.UserID == "" || lost.TemporaryPassword == "" {
		t.Fatalf("ResetPassword of a user the pool does not have: %+v %v; want one made", lost, err)
	}
}
