package cognito

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"
)

// Errors of TOTP MFA, the person's own security calls and the re-check of
// a session.
var (
	// ErrWrongCode: a TOTP code that is not the authenticator's current one.
	ErrWrongCode = errors.New("cognito: the code is not the authenticator's current one")
	// ErrSignedOut: the refresh token no longer works: the person signed
	// out everywhere (GlobalSignOut, AdminUserGlobalSignOut), or was
	// disabled or deleted.
	ErrSignedOut = errors.New("cognito: the person's sign-in was revoked")
	// ErrNoSuchUser: the pool has no user of that email (deleted).
	ErrNoSuchUser = errors.New("cognito: no such user")
)

// Tokens are the person's Cognito tokens from a sign-in: Access for the
// calls a person makes on their own account (AssociateSoftwareToken,
// ChangePassword, ...), Refresh to get another Access later and to learn
// whether the person was signed out everywhere.
type Tokens struct{ Access, Refresh string }

func tokens(auth *types.AuthenticationResultType) Tokens {
	return Tokens{Access: aws.ToString(auth.AccessToken), Refresh: aws.ToString(auth.RefreshToken)}
}

func mfaChallenge(challenge types.ChallengeNameType, session *string) (Result, bool) {
	switch challenge {
	case types.ChallengeNameTypeSoftwareTokenMfa:
		return Result{MFARequired: true, Session: aws.ToString(session)}, true
	case types.ChallengeNameTypeMfaSetup:
		return Result{MFASetupRequired: true, Session: aws.ToString(session)}, true
	}
	return Result{}, false
}

// mfaError maps what Cognito answers a code with.
func mfaError(err error) error {
	var (
		code     *types.CodeMismatchException
		enable   *types.EnableSoftwareTokenMFAException
		expired  *types.ExpiredCodeException
		notAuth  *types.NotAuthorizedException
		notFound *types.ResourceNotFoundException
	)
	switch {
	case errors.As(err, &code), errors.As(err, &enable):
		return ErrWrongCode
	case errors.As(err, &expired), errors.As(err, &notAuth), errors.As(err, &notFound):
		// The challenge's session ended (3 minutes, or too many wrong
		// codes), or an access token that no longer works.
		return ErrChallengeExpired
	}
	return classify(opOther, err) // throttling, attempt limits, ...
}

// AnswerMFA answers the SOFTWARE_TOKEN_MFA challenge of a sign-in with a
// code from the person's authenticator.
func (c *Client) AnswerMFA(ctx context.Context, email, session, code string) (Result, error) {
	out, err := c.api().RespondToAuthChallenge(ctx, &cip.RespondToAuthChallengeInput{
		ClientId:           aws.String(c.clientID),
		ChallengeName:      types.ChallengeNameTypeSoftwareTokenMfa,
		Session:            aws.String(session),
		ChallengeResponses: map[string]string{"USERNAME": email, "SOFTWARE_TOKEN_MFA_CODE": code},
	})
	if err != nil {
		return Result{}, mfaError(err)
	}
	return c.result(ctx, out.ChallengeName, out.Session, out.AuthenticationResult)
}

// BeginMFASetup starts the MFA_SETUP challenge of a pool that requires MFA:
// the authenticator's secret to show the person, and the session to finish
// with.
func (c *Client) BeginMFASetup(ctx context.Context, session string) (secret, next string, err error) {
	out, err := c.api().AssociateSoftwareToken(ctx, &cip.AssociateSoftwareTokenInput{Session: aws.String(session)})
	if err != nil {
		return "", "", mfaError(err)
	}
	return aws.ToString(out.SecretCode), aws.ToString(out.Session), nil
}

// FinishMFASetup checks the first code of the authenticator set up in
// BeginMFASetup and completes the sign-in.
func (c *Client) FinishMFASetup(ctx context.Context, email, session, code string) (Result, error) {
	v, err := c.api().VerifySoftwareToken(ctx, &cip.VerifySoftwareTokenInput{Session: aws.String(session), UserCode: aws.String(code),
		FriendlyDeviceName: aws.String("authenticator")})
	if err != nil {
		return Result{}, mfaError(err)
	}
	if v.Status != types.VerifySoftwareTokenResponseTypeSuccess {
		return Result{}, ErrWrongCode
	}
	out, err := c.api().RespondToAuthChallenge(ctx, &cip.RespondToAuthChallengeInput{
		ClientId:           aws.String(c.clientID),
		ChallengeName:      types.ChallengeNameTypeMfaSetup,
		Session:            v.Session,
		ChallengeResponses: map[string]string{"USERNAME": email},
	})
	if err != nil {
		return Result{}, mfaError(err)
	}
	return c.result(ctx, out.ChallengeName, out.Session, out.AuthenticationResult)
}

// AssociateTOTP starts enrolling an authenticator on the person's account
// (their access token): the secret to show them. Nothing is enabled until
// EnableTOTP.
func (c *Client) AssociateTOTP(ctx context.Context, access string) (string, error) {
	out, err := c.api().AssociateSoftwareToken(ctx, &cip.AssociateSoftwareTokenInput{AccessToken: aws.String(access)})
	if err != nil {
		return "", mfaError(err)
	}
	return aws.ToString(out.SecretCode), nil
}

// EnableTOTP checks a code of the authenticator AssociateTOTP gave, and
// makes TOTP the person's MFA: from then on sign-in asks for a code.
func (c *Client) EnableTOTP(ctx context.Context, access, code string) error {
	v, err := c.api().VerifySoftwareToken(ctx, &cip.VerifySoftwareTokenInput{AccessToken: aws.String(access), UserCode: aws.String(code),
		FriendlyDeviceName: aws.String("authenticator")})
	if err != nil {
		return mfaError(err)
	}
	if v.Status != types.VerifySoftwareTokenResponseTypeSuccess {
		return ErrWrongCode
	}
	return c.setTOTP(ctx, access, true)
}

// DisableTOTP turns the person's TOTP MFA off. The console calls it only
// with an access token from a sign-in that answered a current code.
func (c *Client) DisableTOTP(ctx context.Context, access string) error {
	return c.setTOTP(ctx, access, false)
}

func (c *Client) setTOTP(ctx context.Context, access string, on bool) error {
	_, err := c.api().SetUserMFAPreference(ctx, &cip.SetUserMFAPreferenceInput{AccessToken: aws.String(access),
		SoftwareTokenMfaSettings: &types.SoftwareTokenMfaSettingsType{Enabled: on, PreferredMfa: on}})
	if err != nil {
		return mfaError(err)
	}
	return nil
}

// Refresh trades the person's refresh token for a new access token.
// ErrSignedOut when the token was revoked (signed out everywhere), or its
// person is disabled or gone.
func (c *Client) Refresh(ctx context.Context, refresh string) (string, error) {
	out, err := c.api().InitiateAuth(ctx, &cip.InitiateAuthInput{
		AuthFlow:       types.AuthFlowTypeRefreshTokenAuth,
		ClientId:       aws.String(c.clientID),
		AuthParameters: map[string]string{"REFRESH_TOKEN": refresh},
	})
	var (
		notAuth  *types.NotAuthorizedException
		notFound *types.UserNotFoundException
	)
	if errors.As(err, &notAuth) || errors.As(err, &notFound) {
		return "", ErrSignedOut
	}
	if err != nil {
		return "", fmt.Errorf("cognito: refresh: %w", err)
	}
	if out.AuthenticationResult == nil || out.AuthenticationResult.AccessToken == nil {
		return "", errors.New("cognito: refresh gave no access token")
	}
	return *out.AuthenticationResult.AccessToken, nil
}

// ChangePassword changes the person's password (their access token), the
// current one required. ErrBadCredentials for a wrong current password,
// ErrWeakPassword for a new one the policy refuses.
func (c *Client) ChangePassword(ctx context.Context, access, current, proposed string) error {
	_, err := c.api().ChangePassword(ctx, &cip.ChangePasswordInput{AccessToken: aws.String(access),
		PreviousPassword: aws.String(current), ProposedPassword: aws.String(proposed)})
	if err != nil {
		return classify(opChange, err)
	}
	return nil
}

// SignOutEverywhere revokes every refresh token of the person (their
// access token): each console session's next re-check ends it.
func (c *Client) SignOutEverywhere(ctx context.Context, access string) error {
	if _, err := c.api().GlobalSignOut(ctx, &cip.GlobalSignOutInput{AccessToken: aws.String(access)}); err != nil {
		return fmt.Errorf("cognito: global sign-out: %w", err)
	}
	return nil
}

// Person is what a session's re-check reads of its person.
type Person struct {
	UserID  string
	Enabled bool
	TOTP    bool // TOTP MFA is on
}

// Person reads the pool's user of email (AdminGetUser). ErrNoSuchUser when
// there is none.
func (c *Client) Person(ctx context.Context, email string) (Person, error) {
	out, err := c.api().AdminGetUser(ctx, &cip.AdminGetUserInput{UserPoolId: aws.String(c.poolID), Username: aws.String(email)})
	var notFound *types.UserNotFoundException
	if errors.As(err, &notFound) {
		return Person{}, ErrNoSuchUser
	}
	if err != nil {
		return Person{}, fmt.Errorf("cognito: read user: %w", err)
	}
	return Person{UserID: attribute(out.UserAttributes, "sub"), Enabled: out.Enabled,
		TOTP: slices.Contains(out.UserMFASettingList, string(types.ChallengeNameTypeSoftwareTokenMfa))}, nil
}
