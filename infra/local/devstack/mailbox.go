package devstack

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Mailbox stands in for the email Cognito sends with a password reset code:
// moto sends none, and answers the code in a header of its own
// (x-moto-forgot-password-confirmation-code) instead. The functions'
// Cognito clients pass each such code here (FunctionConfig); make run logs
// it, and a test reads it with Code, as a person reads their email.
type Mailbox struct {
	// Log, when set, gets a line per code (make run's log).
	Log *slog.Logger

	mu    sync.Mutex
	codes map[string]string // the latest code by user name (the email)
}

// Code is the latest reset code sent to email, or "".
func (m *Mailbox) Code(email string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.codes[email]
}

// apiOption reads the codes off ForgotPassword's answers.
func (m *Mailbox) apiOption(s *middleware.Stack) error {
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc("devstack.Mailbox", func(ctx context.Context, in middleware.InitializeInput,
		next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleInitialize(ctx, in)
		forgot, ok := in.Parameters.(*cip.ForgotPasswordInput)
		if !ok || err != nil {
			return out, md, err
		}
		if raw, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
			// An address without an account gets "None": no email.
			if code := raw.Header.Get("x-moto-forgot-password-confirmation-code"); strings.HasPrefix(code, "moto-confirmation-code:") {
				email := aws.ToString(forgot.Username)
				m.mu.Lock()
				if m.codes == nil {
					m.codes = map[string]string{}
				}
				m.codes[email] = code
				m.mu.Unlock()
				if m.Log != nil {
					m.Log.Info("password reset code (moto sends no email; enter this code on the console's page)", "email", email, "code", code)
				}
			}
		}
		return out, md, err
	}), middleware.After)
}
