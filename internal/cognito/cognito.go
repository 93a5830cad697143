// Package cognito signs people in to the console with an Amazon Cognito user
// pool, and manages the pool's users for the operator CLI: the only code
// that speaks to Cognito. Sign-in is InitiateAuth with USER_PASSWORD_AUTH;
// the ID token it returns is verified against the pool's JWKS (verify.go)
// before anyone is let in.
package cognito

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"

	"genjobs/internal/awsclient"
)

// Errors a person can act on. Everything else is an outage or our bug.
var (
	// ErrBadCredentials: a wrong password or an unknown email, told apart
	// to nobody.
	ErrBadCredentials = errors.New("cognito: wrong email or password")
	// ErrWeakPassword: the new password does not meet the pool's policy.
	ErrWeakPassword = errors.New("cognito: the password does not meet the policy")
	// ErrChallengeExpired: the set-password step took too long (Cognito's
	// session lasts 3 minutes); sign in again.
	ErrChallengeExpired = errors.New("cognito: the sign-in step expired")
	// ErrPasswordReset: the operator asked for a reset; the person needs a
	// new temporary password.
	ErrPasswordReset = errors.New("cognito: a password reset is required")
)

// Identity is a signed-in person, from a verified ID token.
type Identity struct {
	UserID string // the token's sub: stable across email changes
	Email  string
}

// Result is what a sign-in step gives: an Identity with the person's
// Tokens, or a challenge the person must answer first (NewPasswordRequired,
// MFARequired or MFASetupRequired, with Session to answer it).
type Result struct {
	Identity            Identity
	Tokens              Tokens
	NewPasswordRequired bool
	// MFARequired: SOFTWARE_TOKEN_MFA, a code from the person's
	// authenticator (AnswerMFA). MFASetupRequired: MFA_SETUP, a pool that
	// requires MFA and a person without it (BeginMFASetup, FinishMFASetup).
	MFARequired, MFASetupRequired bool
	Session                       string
}

// Client is a user pool and its app client.
type Client struct {
	// api is the Cognito client, built by the first call: sessions are
	// the table's, so a start that serves only signed-in people's pages
	// never builds it.
	api      func() *cip.Client
	poolID   string
	clientID string
	verifier *Verifier
}

// Config names the pool, its app client (without a secret), and where its
// ID tokens are checked: JWKSURL and Issuer default to AWS's for the
// pool's region; the local stack's moto serves the JWKS elsewhere while
// its tokens keep AWS's issuer.
type Config struct {
	PoolID, ClientID string
	JWKSURL, Issuer  string
}

// New builds a client of cfg's Cognito that follows p. It does no I/O.
func New(cfg aws.Config, p awsclient.Policy, c Config, v VerifierOptions) (*Client, error) {
	if c.PoolID == "" || c.ClientID == "" {
		return nil, errors.New("cognito: the user pool and its app client are required")
	}
	region := cfg.Region
	if c.Issuer == "" {
		c.Issuer = fmt.Sprintf("https://cognito-idp.%s.amazonaws.com/%s", region, c.PoolID)
	}
	if c.JWKSURL == "" {
		c.JWKSURL = c.Issuer + "/.well-known/jwks.json"
	}
	api := sync.OnceValue(func() *cip.Client { return cip.NewFromConfig(p.Config(cfg, cip.ServiceID)) })
	v.URL, v.Issuer, v.Audience = c.JWKSURL, c.Issuer, c.ClientID
	return &Client{api: api, poolID: c.PoolID, clientID: c.ClientID, verifier: NewVerifier(v)}, nil
}

// SignIn checks an email and password.
func (c *Client) SignIn(ctx context.Context, email, password string) (Result, error) {
	out, err := c.api().InitiateAuth(ctx, &cip.InitiateAuthInput{
		AuthFlow:       types.AuthFlowTypeUserPasswordAuth,
		ClientId:       aws.String(c.clientID),
		AuthParameters: map[string]string{"USERNAME": email, "PASSWORD": password},
	})
	if err != nil {
		return Result{}, classify(opSignIn, err)
	}
	return c.result(ctx, out.ChallengeName, out.Session, out.AuthenticationResult)
}

// SetNewPassword answers the NEW_PASSWORD_REQUIRED challenge of a first
// sign-in with a temporary password.
func (c *Client) SetNewPassword(ctx context.Context, email, session, password string) (Result, error) {
	out, err := c.api().RespondToAuthChallenge(ctx, &cip.RespondToAuthChallengeInput{
		ClientId:           aws.String(c.clientID),
		ChallengeName:      types.ChallengeNameTypeNewPasswordRequired,
		Session:            aws.String(session),
		ChallengeResponses: map[string]string{"USERNAME": email, "NEW_PASSWORD": password},
	})
	if err != nil {
		return Result{}, classify(opChallenge, err)
	}
	return c.result(ctx, out.ChallengeName, out.Session, out.AuthenticationResult)
}

func (c *Client) result(ctx context.Context, challenge types.ChallengeNameType, session *string, auth *types.AuthenticationResultType) (Result, error) {
	if challenge == types.ChallengeNameTypeNewPasswordRequired {
		return Result{NewPasswordRequired: true, Session: aws.ToString(session)}, nil
	}
	if r, ok := mfaChallenge(challenge, session); ok {
		return r, nil
	}
	if challenge != "" || auth == nil || auth.IdToken == nil {
		return Result{}, fmt.Errorf("cognito: sign-in ended with the unsupported challenge %q", challenge)
	}
	id, err := c.verifier.Verify(ctx, *auth.IdToken)
	if err != nil {
		return Result{}, err
	}
	return Result{Identity: id, Tokens: tokens(auth)}, nil
}

// User is a user of the pool, for the operator CLI.
type User struct {
	UserID            string
	Email             string
	TemporaryPassword string // set only when CreateUser made the user
}

// EnsureUser returns the pool's user of email, creating it with a
// temporary password (told to nobody by Cognito: the operator passes it
// on) when there is none. created says which. A user that exists but has
// never signed in gets a new temporary password (recover.go): an earlier
// add that failed after making the user lost the first one.
func (c *Client) EnsureUser(ctx context.Context, email string) (u User, created bool, err error) {
	temp, err := TemporaryPassword()
	if err != nil {
		return User{}, false, err
	}
	out, err := c.api().AdminCreateUser(ctx, &cip.AdminCreateUserInput{
		UserPoolId:        aws.String(c.poolID),
		Username:          aws.String(email),
		TemporaryPassword: aws.String(temp),
		MessageAction:     types.MessageActionTypeSuppress,
		UserAttributes: []types.AttributeType{
			{Name: aws.String("email"), Value: aws.String(email)},
			{Name: aws.String("email_verified"), Value: aws.String("true")},
		},
	})
	var exists *types.UsernameExistsException
	if errors.As(err, &exists) {
		u, err := c.existing(ctx, email)
		return u, false, err
	}
	if err != nil {
		return User{}, false, fmt.Errorf("create user %s: %w", email, classify(opCreate, err))
	}
	u = User{Email: email, TemporaryPassword: temp, UserID: attribute(out.User.Attributes, "sub")}
	if u.UserID == "" {
		return User{}, false, fmt.Errorf("cognito: the new user %s has no sub", email)
	}
	return u, true, nil
}

// User reads the pool's user of email.
func (c *Client) User(ctx context.Context, email string) (User, error) {
	u, _, err := c.user(ctx, email)
	return u, err
}

// user reads the pool's user of email and its status.
func (c *Client) user(ctx context.Context, email string) (User, types.UserStatusType, error) {
	out, err := c.api().AdminGetUser(ctx, &cip.AdminGetUserInput{UserPoolId: aws.String(c.poolID), Username: aws.String(email)})
	if err != nil {
		return User{}, "", fmt.Errorf("read user %s: %w", email, classify(opAdmin, err))
	}
	u := User{Email: email, UserID: attribute(out.UserAttributes, "sub")}
	if u.UserID == "" {
		return User{}, "", fmt.Errorf("cognito: the user %s has no sub", email)
	}
	return u, out.UserStatus, nil
}

// SetPassword gives a user a permanent password (the local stack's demo
// owner, which signs in without the set-password step).
func (c *Client) SetPassword(ctx context.Context, email, password string) error {
	_, err := c.api().AdminSetUserPassword(ctx, &cip.AdminSetUserPasswordInput{
		UserPoolId: aws.String(c.poolID), Username: aws.String(email), Password: aws.String(password), Permanent: true,
	})
	if err != nil {
		return fmt.Errorf("set the password of %s: %w", email, classify(opAdmin, err))
	}
	return nil
}

func attribute(attrs []types.AttributeType, name string) string {
	for _, a := range attrs {
		if aws.ToString(a.Name) == name {
			return aws.ToString(a.Value)
		}
	}
	return ""
}

// TemporaryPassword makes a password that meets the template's policy (12
// characters or more with upper and lower case letters, digits and
// symbols): 20 characters from crypto/rand.
func TemporaryPassword() (string, error) {
	classes := []string{"ABCDEFGHJKLMNPQRSTUVWXYZ", "abcdefghijkmnpqrstuvwxyz", "23456789", "!#%+-=?@^_"}
	all := classes[0] + classes[1] + classes[2] + classes[3]
	pick := func(set string) (byte, error) {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			return 0, err
		}
		return set[n.Int64()], nil
	}
	b := make([]byte, 20)
	for i := range b {
		set := all
		if i < len(classes) {
			set = classes[i]
		}
		c, err := pick(set)
		if err != nil {
			return "", err
		}
		b[i] = c
	}
	// Shuffle, so the classes' characters are not always first.
	for i := len(b) - 1; i > 0; i-- {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(i+1)))
		if err != nil {
			return "", err
		}
		j := n.Int64()
		b[i], b[j] = b[j], b[i]
	}
	return string(b), nil
}

// Pool is a user pool and its app client, by id.
type Pool struct{ PoolID, ClientID string }

// CreatePool makes a user pool as template.yaml's ConsoleUserPool (email
// as user name, the same password policy) and an app client without a
// secret that allows USER_PASSWORD_AUTH: what the local stack and the tests
// do where CloudFormation cannot (moto's does not model Cognito).
func CreatePool(ctx context.Context, cfg aws.Config, name string) (Pool, error) {
	api := cip.NewFromConfig(awsclient.At(cfg, cip.ServiceID))
	pool, err := api.CreateUserPool(ctx, &cip.CreateUserPoolInput{
		PoolName:               aws.String(name),
		UsernameAttributes:     []types.UsernameAttributeType{types.UsernameAttributeTypeEmail},
		AutoVerifiedAttributes: []types.VerifiedAttributeType{types.VerifiedAttributeTypeEmail},
		Policies: &types.UserPoolPolicyType{PasswordPolicy: &types.PasswordPolicyType{
			MinimumLength: aws.Int32(12), RequireLowercase: true, RequireUppercase: true, RequireNumbers: true, RequireSymbols: true,
			TemporaryPasswordValidityDays: 7,
		}},
	})
	if err != nil {
		return Pool{}, fmt.Errorf("cognito: create user pool %s: %w", name, err)
	}
	id := aws.ToString(pool.UserPool.Id)
	client, err := api.CreateUserPoolClient(ctx, &cip.CreateUserPoolClientInput{
		UserPoolId:        aws.String(id),
		ClientName:        aws.String(name + "-console"),
		GenerateSecret:    false,
		ExplicitAuthFlows: []types.ExplicitAuthFlowsType{types.ExplicitAuthFlowsTypeAllowUserPasswordAuth, types.ExplicitAuthFlowsTypeAllowRefreshTokenAuth},
	})
	if err != nil {
		return Pool{}, fmt.Errorf("cognito: create the app client of %s: %w", id, err)
	}
	return Pool{PoolID: id, ClientID: aws.ToString(client.UserPoolClient.ClientId)}, nil
}
