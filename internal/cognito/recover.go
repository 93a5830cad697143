package cognito

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"
)

// How people get back in: a reset code by email they answer themselves
// (ForgotPassword, ConfirmForgotPassword), or a new temporary password an
// owner or the operator passes on (ResetPassword).

// ForgotPassword asks Cognito to email email's person a code to choose a
// new password. An address without an account (or with one that cannot be
// reset: disabled, never signed in, no verified email) gets the same nil
// as one with: the answer tells nobody which addresses have accounts.
func (c *Client) ForgotPassword(ctx context.Context, email string) error {
	_, err := c.api().ForgotPassword(ctx, &cip.ForgotPasswordInput{ClientId: aws.String(c.clientID), Username: aws.String(email)})
	if err = classify(opForgot, err); errors.Is(err, errUntold) {
		return nil
	}
	return err
}

// ConfirmForgotPassword sets email's new password with the code
// ForgotPassword sent. A wrong code and an address without an account are
// both ErrCodeMismatch.
func (c *Client) ConfirmForgotPassword(ctx context.Context, email, code, password string) error {
	_, err := c.api().ConfirmForgotPassword(ctx, &cip.ConfirmForgotPasswordInput{
		ClientId: aws.String(c.clientID), Username: aws.String(email), ConfirmationCode: aws.String(code), Password: aws.String(password),
	})
	return classify(opConfirm, err)
}

// ResetPassword gives email's user a new temporary password (the first
// sign-in asks for a password of their own): an owner's or the operator's
// reset of a member. A user the pool no longer has (deleted, or a local
// pool that was made again) is created anew with a temporary password, so
// a member is never lost to the pool: u.UserID then differs from the
// membership's, which the caller moves to it.
func (c *Client) ResetPassword(ctx context.Context, email string) (u User, err error) {
	u, err = c.User(ctx, email)
	if errors.Is(err, ErrNoUser) {
		u, _, err = c.EnsureUser(ctx, email)
		return u, err
	}
	if err != nil {
		return User{}, err
	}
	if u.TemporaryPassword, err = c.setTemporary(ctx, email); err != nil {
		return User{}, err
	}
	return u, nil
}

// setTemporary gives email's user a new temporary password and returns it.
func (c *Client) setTemporary(ctx context.Context, email string) (string, error) {
	temp, err := TemporaryPassword()
	if err != nil {
		return "", err
	}
	_, err = c.api().AdminSetUserPassword(ctx, &cip.AdminSetUserPasswordInput{
		UserPoolId: aws.String(c.poolID), Username: aws.String(email), Password: aws.String(temp), Permanent: false,
	})
	if err != nil {
		return "", fmt.Errorf("set a temporary password for %s: %w", email, classify(opAdmin, err))
	}
	return temp, nil
}

// neverSignedIn reports whether a user still waits for their first
// sign-in (their temporary password unused), so that adding them again
// may give them a new one: the first one is lost when an add failed after
// the pool made the user.
func neverSignedIn(status types.UserStatusType) bool {
	return status == types.UserStatusTypeForceChangePassword
}

// existing reads email's user, with a new temporary password when they
// have never signed in.
func (c *Client) existing(ctx context.Context, email string) (User, error) {
	u, status, err := c.user(ctx, email)
	if err != nil {
		return User{}, err
	}
	if neverSignedIn(status) {
		if u.TemporaryPassword, err = c.setTemporary(ctx, email); err != nil {
			return User{}, err
		}
	}
	return u, nil
}
