package cognito_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"
	"github.com/pquerna/otp/totp"

	"genjobs/internal/cognito"
	"genjobs/internal/emulator"
	"genjobs/internal/testenv"
)

// totpCode is the current code of an authenticator holding secret, taken
// far enough from the end of its 30-second step that Cognito (moto checks
// the current step only) reads the same step.
func totpCode(t *testing.T, secret string) string {
	t.Helper()
	if left := 30 - time.Now().Unix()%30; left < 4 {
		time.Sleep(time.Duration(left) * time.Second)
	}
	code, err := totp.GenerateCode(secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// wrongCode is a well-formed code that is not the current one.
func wrongCode(t *testing.T, secret string) string {
	n, _ := strconv.Atoi(totpCode(t, secret))
	return fmt.Sprintf("%06d", (n+500000)%1000000)
}

func motoAPI() *cip.Client {
	cfg := emulator.MotoConfig(testenv.MotoEndpoint())
	return cip.NewFromConfig(cfg, func(o *cip.Options) { o.BaseEndpoint = aws.String(testenv.MotoEndpoint()) })
}

func TestTOTPEnrolmentTakesOnlyTheRightCodeAndThenSignInAsksForOne(t *testing.T) {
	ctx := context.Background()
	c, _ := newPool(t)
	const email, pw = "tess@example.com", "Right-Password-1!"
	if _, _, err := c.EnsureUser(ctx, email); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword(ctx, email, pw); err != nil {
		t.Fatal(err)
	}
	r, err := c.SignIn(ctx, email, pw)
	if err != nil || r.Tokens.Access == "" || r.Tokens.Refresh == "" {
		t.Fatalf("sign in: %+v %v; want tokens", r, err)
	}
	secret, err := c.AssociateTOTP(ctx, r.Tokens.Access)
	if err != nil || secret == "" {
		t.Fatalf("associate: %q %v", secret, err)
	}
	if err := c.EnableTOTP(ctx, r.Tokens.Access, wrongCode(t, secret)); !errors.Is(err, cognito.ErrWrongCode) {
		t.Fatalf("enable with a wrong code: %v; want ErrWrongCode", err)
	}
	if again, err := c.SignIn(ctx, email, pw); err != nil || again.MFARequired {
		t.Fatalf("after a refused code, sign-in: %+v %v; want no MFA yet", again, err)
	}
	if err := c.EnableTOTP(ctx, r.Tokens.Access, totpCode(t, secret)); err != nil {
		t.Fatalf("enable with the right code: %v", err)
	}
	if p, err := c.Person(ctx, email); err != nil || !p.TOTP || !p.Enabled {
		t.Fatalf("person: %+v %v; want TOTP on", p, err)
	}

	ch, err := c.SignIn(ctx, email, pw)
	if err != nil || !ch.MFARequired || ch.Session == "" || ch.Identity.UserID != "" {
		t.Fatalf("sign in with MFA on: %+v %v; want the code step", ch, err)
	}
	if _, err := c.AnswerMFA(ctx, email, ch.Session, wrongCode(t, secret)); !errors.Is(err, cognito.ErrWrongCode) {
		t.Fatalf("a wrong code at sign-in: %v; want ErrWrongCode", err)
	}
	ch, _ = c.SignIn(ctx, email, pw)
	in, err := c.AnswerMFA(ctx, email, ch.Session, totpCode(t, secret))
	if err != nil || in.Identity.Email != email || in.Tokens.Access == "" {
		t.Fatalf("the right code at sign-in: %+v %v", in, err)
	}

	if err := c.DisableTOTP(ctx, in.Tokens.Access); err != nil {
		t.Fatal(err)
	}
	if r, err := c.SignIn(ctx, email, pw); err != nil || r.MFARequired || r.Identity.Email != email {
		t.Fatalf("sign in after MFA off: %+v %v", r, err)
	}
}

func TestAPoolThatRequiresMFASetsItUpAtFirstSignIn(t *testing.T) {
	ctx := context.Background()
	c, pool := newPool(t)
	if _, err := motoAPI().SetUserPoolMfaConfig(ctx, &cip.SetUserPoolMfaConfigInput{UserPoolId: aws.String(pool.PoolID),
		MfaConfiguration:              types.UserPoolMfaTypeOn,
		SoftwareTokenMfaConfiguration: &types.SoftwareTokenMfaConfigType{Enabled: true}}); err != nil {
		t.Fatal(err)
	}
	const email = "newbie@example.com"
	u, _, err := c.EnsureUser(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.SignIn(ctx, email, u.TemporaryPassword)
	if err != nil || !r.NewPasswordRequired {
		t.Fatalf("first sign-in: %+v %v", r, err)
	}
	r, err = c.SetNewPassword(ctx, email, r.Session, "Correct-Horse-42!")
	if err != nil || !r.MFASetupRequired || r.Session == "" {
		t.Fatalf("set password in a pool that requires MFA: %+v %v; want the MFA setup step", r, err)
	}
	secret, session, err := c.BeginMFASetup(ctx, r.Session)
	if err != nil || secret == "" || session == "" {
		t.Fatalf("begin setup: %q %q %v", secret, session, err)
	}
	if _, err := c.FinishMFASetup(ctx, email, session, wrongCode(t, secret)); !errors.Is(err, cognito.ErrWrongCode) {
		t.Fatalf("finish with a wrong code: %v; want ErrWrongCode", err)
	}
	in, err := c.FinishMFASetup(ctx, email, session, totpCode(t, secret))
	if err != nil || in.Identity.UserID != u.UserID {
		t.Fatalf("finish with the right code: %+v %v", in, err)
	}
}

func TestARefreshFailsOnceThePersonIsSignedOutEverywhere(t *testing.T) {
	ctx := context.Background()
	c, pool := newPool(t)
	const email, pw = "gone@example.com", "Right-Password-1!"
	if _, _, err := c.EnsureUser(ctx, email); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword(ctx, email, pw); err != nil {
		t.Fatal(err)
	}
	r, err := c.SignIn(ctx, email, pw)
	if err != nil {
		t.Fatal(err)
	}
	access, err := c.Refresh(ctx, r.Tokens.Refresh)
	if err != nil || access == "" {
		t.Fatalf("refresh: %q %v", access, err)
	}
	if err := c.SignOutEverywhere(ctx, access); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Refresh(ctx, r.Tokens.Refresh); !errors.Is(err, cognito.ErrSignedOut) {
		t.Fatalf("refresh after a global sign-out: %v; want ErrSignedOut", err)
	}

	if _, err := motoAPI().AdminDisableUser(ctx, &cip.AdminDisableUserInput{UserPoolId: aws.String(pool.PoolID), Username: aws.String(email)}); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Person(ctx, email); err != nil || p.Enabled {
		t.Fatalf("a disabled person: %+v %v; want Enabled false", p, err)
	}
	if _, err := motoAPI().AdminDeleteUser(ctx, &cip.AdminDeleteUserInput{UserPoolId: aws.String(pool.PoolID), Username: aws.String(email)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Person(ctx, email); !errors.Is(err, cognito.ErrNoSuchUser) {
		t.Fatalf("a deleted person: %v; want ErrNoSuchUser", err)
	}
}
