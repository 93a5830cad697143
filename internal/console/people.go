package console

import (
	"errors"
	"net/http"
	"strconv"

	"genjobs/internal/cognito"
	"genjobs/internal/fault"
)

// What the user pool answers, as people read it. Every error package
// cognito names is a message beside the form that was sent (or the
// sign-in page's), with its status; an outage is the 503 page with
// Retry-After (internalError); only what is left, the deployment's own
// mistakes, is the fixed 500 page.

// refusal is a page's answer to a person's step the pool refused.
type refusal struct {
	status     int
	retryAfter int // seconds; 0: no Retry-After
	msg        string
	again      bool // the step cannot go on: back to the sign-in form
}

// Messages shared by the pages.
const (
	msgWeakPassword = "Choose a stronger password: at least 12 characters with upper and lower case letters, a digit and a symbol."
	msgTooMany      = "Too many attempts. Wait a few minutes, then try again."
)

// identityRefusal is the answer to err when a person can act on it.
func identityRefusal(err error) (refusal, bool) {
	switch {
	case errors.Is(err, cognito.ErrBadCredentials):
		return refusal{status: http.StatusUnauthorized, msg: msgBadCredentials}, true
	case errors.Is(err, cognito.ErrChallengeExpired):
		return refusal{status: http.StatusUnauthorized, again: true,
			msg: "That step took too long or is no longer valid. Sign in again with your temporary password."}, true
	case errors.Is(err, cognito.ErrPasswordReset):
		return refusal{status: http.StatusUnauthorized,
			msg: "Your password must be reset: use \u201cForgot your password?\u201d below, or ask the workspace's owner for a new temporary password."}, true
	case errors.Is(err, cognito.ErrNotConfirmed):
		return refusal{status: http.StatusForbidden,
			msg: "Your account is not active yet: ask the workspace's owner to reset your password, which gives you a temporary one."}, true
	case errors.Is(err, cognito.ErrWeakPassword):
		return refusal{status: http.StatusBadRequest, msg: msgWeakPassword}, true
	case errors.Is(err, cognito.ErrInvalidEmail):
		return refusal{status: http.StatusBadRequest, msg: "The sign-in service does not accept this address. Check it, or use another."}, true
	case errors.Is(err, cognito.ErrCodeMismatch):
		return refusal{status: http.StatusBadRequest, msg: "That code is not right for this address. Check the email we sent, or ask for a new code."}, true
	case errors.Is(err, cognito.ErrCodeExpired):
		return refusal{status: http.StatusBadRequest, msg: "That code has expired. Ask for a new one."}, true
	case errors.Is(err, cognito.ErrTooManyAttempts):
		return refusal{status: http.StatusTooManyRequests, retryAfter: 300, msg: msgTooMany}, true
	case errors.Is(err, cognito.ErrDelivery):
		return refusal{status: http.StatusServiceUnavailable, retryAfter: 60,
			msg: "We could not send the email with your code. Try again in a few minutes."}, true
	case errors.Is(err, cognito.ErrRefused):
		return refusal{status: http.StatusForbidden, msg: "The sign-in service refused this request. Try again later, or from another network."}, true
	case errors.Is(err, cognito.ErrNoUser):
		return refusal{status: http.StatusNotFound, msg: "The sign-in service has no account for this person."}, true
	}
	return refusal{}, false
}

// refuse answers a refused step: shown renders the form again with the
// message and status (it sets no header), after Retry-After when the
// refusal has one. ok is false when err is no refusal: the caller answers
// it as an internal error (a 503 for an outage).
func refuse(w http.ResponseWriter, err error, shown func(status int, msg string, again bool)) bool {
	ref, ok := identityRefusal(err)
	if !ok || fault.IsUnavailable(err) {
		return false
	}
	if ref.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ref.retryAfter))
	}
	shown(ref.status, ref.msg, ref.again)
	return true
}
