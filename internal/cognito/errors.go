package cognito

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"

	"genjobs/internal/fault"
)

// More errors a person can act on (see also cognito.go's). The console
// turns each into a form's message; anything left is an outage
// (fault.IsUnavailable: a 503 with Retry-After) or our bug (a 500).
var (
	// ErrInvalidEmail: the pool refuses the address as a user name.
	ErrInvalidEmail = errors.New("cognito: the user pool refuses this email address")
	// ErrNotConfirmed: the account was never confirmed; an owner's reset
	// (a new temporary password) lets its person in.
	ErrNotConfirmed = errors.New("cognito: the account is not confirmed")
	// ErrCodeMismatch: a password-reset code that is wrong, or that
	// belongs to no account (told apart to nobody).
	ErrCodeMismatch = errors.New("cognito: the code is wrong")
	// ErrCodeExpired: a password-reset code that was right but is too old.
	ErrCodeExpired = errors.New("cognito: the code has expired")
	// ErrTooManyAttempts: Cognito's own limit on attempts for this person
	// (too many wrong codes, too many reset emails); wait and try again.
	ErrTooManyAttempts = errors.New("cognito: too many attempts; try again later")
	// ErrDelivery: the reset code could not be sent (the pool's email
	// sending failed); nothing is wrong with what the person typed.
	ErrDelivery = errors.New("cognito: the code could not be delivered")
	// ErrRefused: the pool's firewall (AWS WAF on the pool) refused the
	// request.
	ErrRefused = errors.New("cognito: the request was refused by the user pool's firewall")
	// ErrNoUser: an operator's call named a user the pool does not have.
	ErrNoUser = errors.New("cognito: no such user")
)

// op is the kind of call an error came from: the same Cognito error means
// different things to a sign-in, a reset and an operator's call.
type op int

const (
	opSignIn    op = iota // InitiateAuth
	opChallenge           // RespondToAuthChallenge
	opCreate              // AdminCreateUser
	opAdmin               // AdminGetUser, AdminSetUserPassword
	opForgot              // ForgotPassword
	opConfirm             // ConfirmForgotPassword
	opChange              // ChangePassword: the current password and a new one
	opOther               // the MFA calls (mfa.go maps their own refusals first)
)

// classify maps what a Cognito call returned to the package's errors.
// Throttling and Cognito's own failures are marked as outages (the
// awsclient middleware has usually marked them already); the pool's
// configuration errors (a missing pool or client, a broken email role or
// trigger) stay what they are: a deployment's bug, logged by the caller.
func classify(o op, err error) error {
	if err == nil {
		return nil
	}
	var (
		notAuth    *types.NotAuthorizedException
		notFound   *types.UserNotFoundException
		weak       *types.InvalidPasswordException
		history    *types.PasswordHistoryPolicyViolationException
		reset      *types.PasswordResetRequiredException
		invalid    *types.InvalidParameterException
		mismatch   *types.CodeMismatchException
		expired    *types.ExpiredCodeException
		unconfirm  *types.UserNotConfirmedException
		limit      *types.LimitExceededException
		failures   *types.TooManyFailedAttemptsException
		delivery   *types.CodeDeliveryFailureException
		forbidden  *types.ForbiddenException
		throttled  *types.TooManyRequestsException
		internal   *types.InternalErrorException
		internal2  *types.InternalServerException
		concurrent *types.ConcurrentModificationException
		// Cognito's answer to a missing pool or client, and moto's to a
		// session or user it does not know (where Cognito says
		// NotAuthorized or UserNotFound); see opChallenge and opConfirm.
		missing *types.ResourceNotFoundException
	)
	switch {
	case errors.As(err, &throttled), errors.As(err, &internal), errors.As(err, &internal2), errors.As(err, &concurrent):
		if fault.IsUnavailable(err) {
			return err
		}
		var api interface{ ErrorCode() string }
		errors.As(err, &api)
		return &fault.Unavailable{Code: api.ErrorCode(), Err: err}
	case errors.As(err, &limit), errors.As(err, &failures):
		return ErrTooManyAttempts
	case errors.As(err, &forbidden):
		return ErrRefused
	case errors.As(err, &delivery):
		return ErrDelivery
	case errors.As(err, &reset):
		return ErrPasswordReset
	case errors.As(err, &unconfirm):
		return ErrNotConfirmed
	case errors.As(err, &weak), errors.As(err, &history):
		if o == opAdmin || o == opCreate {
			break // our generated password: the policy and the generator differ
		}
		return ErrWeakPassword
	}
	switch o {
	case opSignIn:
		if errors.As(err, &notAuth) && mentions(notAuth.Message, "attempts exceeded") {
			return ErrTooManyAttempts // Cognito's own lockout after wrong passwords
		}
		// An address the pool cannot take is no account either.
		if errors.As(err, &notFound) || errors.As(err, &notAuth) || errors.As(err, &invalid) {
			return ErrBadCredentials
		}
	case opChallenge:
		if errors.As(err, &invalid) && mentions(invalid.Message, "password") {
			// A password of a form the policy refuses outright (too long,
			// characters it does not take) comes as an invalid parameter.
			return ErrWeakPassword
		}
		// A session that is old, forged or of another person, a user gone
		// meanwhile: the step cannot go on; sign in again.
		if errors.As(err, &notAuth) || errors.As(err, &notFound) || errors.As(err, &invalid) ||
			errors.As(err, &mismatch) || errors.As(err, &expired) || errors.As(err, &missing) {
			return ErrChallengeExpired
		}
	case opCreate:
		if errors.As(err, &invalid) {
			return ErrInvalidEmail
		}
	case opAdmin:
		if errors.As(err, &notFound) {
			return ErrNoUser
		}
	case opForgot:
		// ForgotPassword's refusals that would tell whether an address has
		// an account are answered by the caller as a success.
		if errors.As(err, &notFound) || errors.As(err, &notAuth) || errors.As(err, &invalid) {
			return errUntold
		}
	case opChange:
		if errors.As(err, &notAuth) || errors.As(err, &notFound) {
			return ErrBadCredentials // the current password is wrong
		}
		if errors.As(err, &invalid) {
			return ErrWeakPassword // a new password of a form the policy refuses outright
		}
	case opConfirm:
		if errors.As(err, &expired) {
			return ErrCodeExpired
		}
		if errors.As(err, &invalid) && mentions(invalid.Message, "password") {
			return ErrWeakPassword
		}
		if errors.As(err, &mismatch) || errors.As(err, &notFound) || errors.As(err, &notAuth) || errors.As(err, &invalid) ||
			errors.As(err, &missing) {
			return ErrCodeMismatch
		}
	}
	return fmt.Errorf("cognito: %w", err)
}

// errUntold is a ForgotPassword refusal that must look like a success: no
// account, a disabled one, one without a verified email.
var errUntold = errors.New("cognito: refused, told to nobody")

func mentions(msg *string, word string) bool {
	return strings.Contains(strings.ToLower(aws.ToString(msg)), word)
}
