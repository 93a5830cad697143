package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"genjobs/internal/cognito"
	"genjobs/internal/console/pages"
	"genjobs/internal/member"
	"genjobs/internal/store"
)

// Getting back in: "Forgot your password?" (a code by email, then a new
// password), and an owner's reset of a member (a new temporary password).

// signInNotices are what the sign-in page says after a redirect (?done=).
var signInNotices = map[string]string{
	"password-reset": "Your password is changed. Sign in with it.",
}

// counted counts err against t when it is a failure the throttle counts (a
// wrong password, a forged or stale challenge, a wrong authenticator code,
// a wrong or old reset code), and returns it.
func (c *Console) counted(r *http.Request, t throttle, err error) error {
	for _, e := range []error{cognito.ErrBadCredentials, cognito.ErrChallengeExpired, cognito.ErrWrongCode, cognito.ErrCodeMismatch, cognito.ErrCodeExpired} {
		if errors.Is(err, e) {
			c.failed(r, t)
			break
		}
	}
	return err
}

// signInRefused answers a sign-in step's error: the message beside the
// sign-in form (the set-password form for a weak password), or an
// internal error's page.
func (c *Console) signInRefused(w http.ResponseWriter, r *http.Request, data pages.SignInData, err error) {
	if refuse(w, err, func(status int, msg string, again bool) {
		data.Error = msg
		if errors.Is(err, cognito.ErrWeakPassword) && data.Challenge != "" {
			c.show(w, r, status, &view{Title: "Choose a password"}, pages.SetPassword(data))
			return
		}
		data.Challenge = ""
		c.show(w, r, status, &view{Title: "Sign in"}, pages.SignIn(data))
	}) {
		return
	}
	c.internalError(w, r, "sign in", err)
}

func (c *Console) forgotPage(w http.ResponseWriter, r *http.Request) {
	email := member.NormalizeEmail(r.URL.Query().Get("email"))
	if member.ValidEmail(email) != nil {
		email = ""
	}
	c.show(w, r, http.StatusOK, &view{Title: "Forgot your password?"}, pages.Forgot(pages.EmailForm{Email: email}))
}

// forgotPassword asks Cognito to email a code, then sends the browser to
// the page where the code is entered. Every address gets the same answer,
// whether it has an account or not. Each request counts against the
// throttle: it sends an email.
func (c *Console) forgotPassword(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	data := pages.EmailForm{Email: member.NormalizeEmail(r.PostForm.Get("email"))}
	if member.ValidEmail(data.Email) != nil {
		data.Error = "Enter the email address you sign in with."
		c.show(w, r, http.StatusBadRequest, &view{Title: "Forgot your password?"}, pages.Forgot(data))
		return
	}
	t := c.throttleOf(r, scopeReset, data.Email)
	if c.throttled(w, r, t) {
		return
	}
	c.failed(r, t)
	if err := c.Identity.ForgotPassword(r.Context(), data.Email); err != nil {
		if !refuse(w, err, func(status int, msg string, _ bool) {
			data.Error = msg
			c.show(w, r, status, &view{Title: "Forgot your password?"}, pages.Forgot(data))
		}) {
			c.internalError(w, r, "forgot password", err)
		}
		return
	}
	c.logger(r).Info("password reset code requested")
	http.Redirect(w, r, Base+"/reset-password?email="+url.QueryEscape(data.Email), http.StatusSeeOther)
}

func (c *Console) resetPage(w http.ResponseWriter, r *http.Request) {
	email := member.NormalizeEmail(r.URL.Query().Get("email"))
	if member.ValidEmail(email) != nil {
		http.Redirect(w, r, Base+"/forgot-password", http.StatusSeeOther)
		return
	}
	c.show(w, r, http.StatusOK, &view{Title: "Choose a new password"}, pages.ResetPassword(pages.EmailForm{Email: email}))
}

// MaxCodeBytes bounds a reset code (Cognito's are 6 digits; its limit is
// 2048 characters).
const MaxCodeBytes = 64

// confirmReset sets the new password with the emailed code, then sends the
// browser to sign in with it.
func (c *Console) confirmReset(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	data := pages.EmailForm{Email: member.NormalizeEmail(r.PostForm.Get("email"))}
	code := trimmed(r, "code")
	password, again := r.PostForm.Get("password"), r.PostForm.Get("password_again")
	if member.ValidEmail(data.Email) != nil {
		http.Redirect(w, r, Base+"/forgot-password", http.StatusSeeOther)
		return
	}
	switch {
	case code == "" || len(code) > MaxCodeBytes:
		data.Error = "Enter the code from the email."
	default:
		data.Error = newPasswordProblem(password, again)
	}
	if data.Error != "" {
		c.show(w, r, http.StatusBadRequest, &view{Title: "Choose a new password"}, pages.ResetPassword(data))
		return
	}
	t := c.throttleOf(r, scopeReset, data.Email)
	if c.throttled(w, r, t) {
		return
	}
	err := c.counted(r, t, c.Identity.ConfirmForgotPassword(r.Context(), data.Email, code, password))
	if err != nil {
		if !refuse(w, err, func(status int, msg string, _ bool) {
			data.Error = msg
			c.show(w, r, status, &view{Title: "Choose a new password"}, pages.ResetPassword(data))
		}) {
			c.internalError(w, r, "confirm password reset", err)
		}
		return
	}
	c.logger(r).Info("password reset by code")
	http.Redirect(w, r, Base+"/sign-in?done=password-reset", http.StatusSeeOther)
}

// onceReset is the holder's id of a member's new temporary password.
func onceReset(user string) string { return "reset:" + user }

// theMember finds the workspace's member the path names; the answer is
// written (404) when there is none.
func (c *Console) theMember(w http.ResponseWriter, r *http.Request, req *request) (member.Membership, bool) {
	ms, err := c.Members.Members(r.Context(), req.current.WorkspaceID)
	if err != nil {
		c.internalError(w, r, "read members", err)
		return member.Membership{}, false
	}
	for _, m := range ms {
		if m.UserID == r.PathValue("user") {
			return m, true
		}
	}
	c.fail(w, r, http.StatusNotFound, "That person is not a member of "+req.current.WorkspaceName+".")
	return member.Membership{}, false
}

func (c *Console) resetMemberPage(w http.ResponseWriter, r *http.Request, req *request) {
	if !req.current.Role.ManagesMembers() {
		c.fail(w, r, http.StatusForbidden, "Only owners manage members.")
		return
	}
	m, ok := c.theMember(w, r, req)
	if !ok {
		return
	}
	data := pages.ResetMemberData{Acting: req.acting(), Member: m}
	if r.URL.Query().Get("done") == "1" {
		// After the reset's redirect: its one display.
		value, ok, err := c.takeOnce(r.Context(), req, onceReset(m.UserID))
		if err != nil {
			c.internalError(w, r, "show the temporary password", err)
			return
		}
		data.TemporaryPassword, data.ShownOnce = value, !ok
	}
	c.show(w, r, http.StatusOK, c.view(req, "members", "Reset the password of "+m.Email), pages.ResetMember(data))
}

// resetMember gives a member a new temporary password, shown once. A member
// whose user the pool has lost gets a new user, and the membership moves
// to it: nobody is lost to a half-finished add or a pool made again.
func (c *Console) resetMember(w http.ResponseWriter, r *http.Request, req *request) {
	m, ok := c.theMember(w, r, req)
	if !ok {
		return
	}
	u, err := c.Identity.ResetPassword(r.Context(), m.Email)
	if err == nil && u.UserID != m.UserID {
		m, err = c.Members.MoveMember(r.Context(), m.WorkspaceID, m.UserID, u.UserID)
	}
	if err != nil {
		if !refuse(w, err, func(status int, msg string, _ bool) { c.fail(w, r, status, msg) }) {
			c.internalError(w, r, "reset a member's password", err)
		}
		return
	}
	c.logger(r).Info("member password reset", "workspace_id", req.current.WorkspaceID, "user_id", u.UserID, "by", req.session.UserID)
	// Shown once, after a redirect (a reload of the page resets nothing):
	// held under the session for at most OnceLife.
	if err := c.holdOnce(r.Context(), req, onceReset(u.UserID), u.TemporaryPassword); err != nil {
		c.internalError(w, r, "hold the temporary password", err)
		return
	}
	http.Redirect(w, r, Base+"/settings/members/"+url.PathEscape(u.UserID)+"/reset-password?done=1", http.StatusSeeOther)
}

// adopt moves ws's membership held by an earlier user of email (one the
// pool has lost and made again) to user, so that adding the person again
// finds them rather than listing them twice.
func (c *Console) adopt(ctx context.Context, ws, email, user string) error {
	ms, err := c.Members.Members(ctx, ws)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Email == email && m.UserID != user {
			if _, err := c.Members.MoveMember(ctx, ws, m.UserID, user); err != nil && !errors.Is(err, store.ErrExists) {
				return err
			}
		}
	}
	return nil
}
