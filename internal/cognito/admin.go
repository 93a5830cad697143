package cognito

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
)

// Disable signs the pool's user of email out everywhere
// (AdminUserGlobalSignOut: each console session of theirs ends at its next
// re-check) and disables them (AdminDisableUser: they can no longer sign
// in). Disabling a disabled user succeeds, so a retry meets its own
// success. ErrNoUser when the pool has no such user.
func (c *Client) Disable(ctx context.Context, email string) (User, error) {
	u, err := c.User(ctx, email)
	if err != nil {
		return User{}, err
	}
	if _, err := c.api().AdminUserGlobalSignOut(ctx, &cip.AdminUserGlobalSignOutInput{
		UserPoolId: aws.String(c.poolID), Username: aws.String(email),
	}); err != nil {
		return User{}, fmt.Errorf("sign %s out everywhere: %w", email, classify(opAdmin, err))
	}
	if _, err := c.api().AdminDisableUser(ctx, &cip.AdminDisableUserInput{
		UserPoolId: aws.String(c.poolID), Username: aws.String(email),
	}); err != nil {
		return User{}, fmt.Errorf("disable %s: %w", email, classify(opAdmin, err))
	}
	return u, nil
}

// Enable lets a disabled user of the pool sign in again
// (AdminEnableUser); enabling an enabled user succeeds. ErrNoUser when the
// pool has no such user.
func (c *Client) Enable(ctx context.Context, email string) (User, error) {
	u, err := c.User(ctx, email)
	if err != nil {
		return User{}, err
	}
	if _, err := c.api().AdminEnableUser(ctx, &cip.AdminEnableUserInput{
		UserPoolId: aws.String(c.poolID), Username: aws.String(email),
	}); err != nil {
		return User{}, fmt.Errorf("enable %s: %w", email, classify(opAdmin, err))
	}
	return u, nil
}
