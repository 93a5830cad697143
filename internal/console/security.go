package console

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"genjobs/internal/cognito"
	"genjobs/internal/console/pages"
	"genjobs/internal/httpapi"
	"genjobs/internal/member"
)

// Security is what the security page and the sessions' re-check ask of
// Cognito (cognito.Client).
type Security interface {
	AnswerMFA(ctx context.Context, email, session, code string) (cognito.Result, error)
	BeginMFASetup(ctx context.Context, session string) (secret, next string, err error)
	FinishMFASetup(ctx context.Context, email, session, code string) (cognito.Result, error)
	AssociateTOTP(ctx context.Context, access string) (string, error)
	EnableTOTP(ctx context.Context, access, code string) error
	DisableTOTP(ctx context.Context, access string) error
	Refresh(ctx context.Context, refresh string) (string, error)
	ChangePassword(ctx context.Context, access, current, proposed string) error
	SignOutEverywhere(ctx context.Context, access string) error
	Person(ctx context.Context, email string) (cognito.Person, error)
}

// SessionSecurity is what the re-check and a password change write
// (sessionsdb.DB).
type SessionSecurity interface {
	MarkSessionChecked(ctx context.Context, hash string, at time.Time) error
	SetSessionRefresh(ctx context.Context, hash, sealed string) error
	EndOtherSessions(ctx context.Context, user, keep string) (int, error)
}

// How the security page gets the Cognito access token its calls need.
// The console keeps its own session and no usable Cognito token at rest:
// each change is made with a token from a fresh sign-in with the person's
// current password (and current code when MFA is on), asked on the form.
// A stolen session cookie is then not enough to add an authenticator,
// turn MFA off or change the password. The one exception is the second
// step of adding an authenticator (its first code), which follows a
// password step and takes its token from the session's refresh token: it
// can only confirm a key the person was just shown.

func (c *Console) securityRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+Base+"/sign-in/mfa", c.answerMFA)
	mux.HandleFunc("GET "+Base+"/settings/security", c.securityPage)
	mux.HandleFunc("POST "+Base+"/settings/security/mfa/start", c.form(c.startTOTP, nil))
	mux.HandleFunc("POST "+Base+"/settings/security/mfa/confirm", c.form(c.confirmTOTP, nil))
	mux.HandleFunc("POST "+Base+"/settings/security/mfa/disable", c.form(c.disableTOTP, nil))
	mux.HandleFunc("POST "+Base+"/settings/security/password", c.form(c.changePassword, nil))
}

var securityNotices = map[string]string{
	"mfa-on":   "Two-step sign-in is on: signing in now asks for a code from your authenticator app.",
	"mfa-off":  "Two-step sign-in is off.",
	"password": "Your password was changed, and your other sessions were signed out.",
}

// securityPage is for every signed-in person, in a workspace or not.
func (c *Console) securityPage(w http.ResponseWriter, r *http.Request) {
	req, ok := c.signedIn(w, r)
	if !ok {
		return
	}
	c.renderSecurity(w, r, req, http.StatusOK, pages.SecurityData{})
}

func (c *Console) renderSecurity(w http.ResponseWriter, r *http.Request, req *request, status int, d pages.SecurityData) {
	p, err := c.Identity.Person(r.Context(), req.session.Email)
	if err != nil {
		c.internalError(w, r, "read the person's MFA", err)
		return
	}
	d.TOTP, d.CSRF = p.TOTP, req.session.CSRF
	v := c.view(req, "security", "Security")
	v.Back = Base + "/settings/security"
	v.Notice = securityNotices[r.URL.Query().Get("done")]
	c.show(w, r, status, v, pages.Security(d))
}

func (c *Console) securityDone(w http.ResponseWriter, r *http.Request, what string) {
	http.Redirect(w, r, Base+"/settings/security?done="+what, http.StatusSeeOther)
}

// reauth signs the person in again with password (and code, when
// Cognito asks one): the proof every change on the page needs. A refusal
// is rendered with its message in *field (nothing changed), and ok is
// false. mfa says whether Cognito asked for a code.
func (c *Console) reauth(w http.ResponseWriter, r *http.Request, req *request, password, code string, d *pages.SecurityData, field *string) (res cognito.Result, mfa, ok bool) {
	refuse := func(status int, msg string) (cognito.Result, bool, bool) {
		*field = msg
		c.renderSecurity(w, r, req, status, *d)
		return cognito.Result{}, mfa, false
	}
	if password == "" || len(password) > MaxPasswordBytes {
		return refuse(http.StatusBadRequest, "Enter your current password.")
	}
	// A password or code guessed here counts as at sign-in (throttle.go).
	t := c.throttleOf(r, scopeSignIn, req.session.Email)
	if c.throttled(w, r, t) {
		return cognito.Result{}, false, false
	}
	res, err := c.Identity.SignIn(r.Context(), req.session.Email, password)
	if err == nil && res.MFARequired {
		mfa = true
		digits, ok := totpCode(code)
		if !ok {
			return refuse(http.StatusBadRequest, "Enter the 6-digit code your authenticator app shows.")
		}
		res, err = c.Identity.AnswerMFA(r.Context(), req.session.Email, res.Session, digits)
	}
	err = c.counted(r, t, err)
	switch {
	case errors.Is(err, cognito.ErrBadCredentials):
		return refuse(http.StatusUnauthorized, "That is not your current password. Nothing was changed.")
	case errors.Is(err, cognito.ErrWrongCode):
		return refuse(http.StatusUnauthorized, msgWrongCode)
	case errors.Is(err, cognito.ErrChallengeExpired):
		return refuse(http.StatusUnauthorized, "That took too long. Nothing was changed; send the form again.")
	case errors.Is(err, cognito.ErrPasswordReset):
		return refuse(http.StatusUnauthorized, "Your password must be reset first: ask the workspace's owner or the operator.")
	case err != nil:
		c.internalError(w, r, "confirm the person's password", err)
		return cognito.Result{}, mfa, false
	case res.Tokens.Access == "" && !res.MFARequired:
		c.internalError(w, r, "confirm the person's password", errors.New("the sign-in gave no access token"))
		return cognito.Result{}, mfa, false
	}
	return res, mfa, true
}

// startTOTP: the current password, then the authenticator's key to add.
func (c *Console) startTOTP(w http.ResponseWriter, r *http.Request, req *request) {
	var d pages.SecurityData
	res, mfa, ok := c.reauth(w, r, req, r.PostForm.Get("password"), "", &d, &d.ErrorMFA)
	if !ok {
		return
	}
	if mfa {
		c.securityDone(w, r, "mfa-on") // already on
		return
	}
	secret, err := c.Identity.AssociateTOTP(r.Context(), res.Tokens.Access)
	if err != nil {
		c.internalError(w, r, "associate an authenticator", err)
		return
	}
	d.Enrol, d.Secret, d.QR = true, secret, qrCode(req.session.Email, secret)
	c.renderSecurity(w, r, req, http.StatusOK, d)
}

// confirmTOTP: the authenticator's first code turns MFA on.
func (c *Console) confirmTOTP(w http.ResponseWriter, r *http.Request, req *request) {
	d := pages.SecurityData{Enrol: true, Secret: totpSecret(r.PostForm.Get("secret"))}
	d.QR = qrCode(req.session.Email, d.Secret)
	code, ok := totpCode(r.PostForm.Get("code"))
	if !ok {
		d.ErrorMFA = "Enter the 6-digit code your authenticator app shows."
		c.renderSecurity(w, r, req, http.StatusBadRequest, d)
		return
	}
	access, ok := c.sessionAccess(w, r, req)
	if !ok {
		return
	}
	switch err := c.Identity.EnableTOTP(r.Context(), access, code); {
	case errors.Is(err, cognito.ErrWrongCode):
		d.ErrorMFA = msgWrongCode
		c.renderSecurity(w, r, req, http.StatusUnauthorized, d)
		return
	case errors.Is(err, cognito.ErrChallengeExpired):
		d = pages.SecurityData{ErrorMFA: "Adding the authenticator took too long. Nothing was changed; start again."}
		c.renderSecurity(w, r, req, http.StatusUnauthorized, d)
		return
	case err != nil:
		c.internalError(w, r, "turn MFA on", err)
		return
	}
	c.logger(r).Info("TOTP MFA turned on", "user_id", req.session.UserID)
	c.securityDone(w, r, "mfa-on")
}

// sessionAccess is an access token from the session's refresh token.
func (c *Console) sessionAccess(w http.ResponseWriter, r *http.Request, req *request) (string, bool) {
	ck, err := r.Cookie(CookieName)
	var refresh string
	if err == nil && req.session.Refresh != "" {
		refresh, err = member.OpenRefresh(ck.Value, req.session.Refresh)
	}
	if refresh == "" || err != nil {
		c.fail(w, r, http.StatusConflict, "This session cannot make that change: sign out, sign in again, and start again.")
		return "", false
	}
	access, err := c.Identity.Refresh(r.Context(), refresh)
	if errors.Is(err, cognito.ErrSignedOut) {
		c.endSession(w, r, req.session, "signed out everywhere")
		return "", false
	}
	if err != nil {
		c.internalError(w, r, "refresh the person's token", err)
		return "", false
	}
	return access, true
}

// disableTOTP: the current password and a current code turn MFA off.
func (c *Console) disableTOTP(w http.ResponseWriter, r *http.Request, req *request) {
	var d pages.SecurityData
	res, mfa, ok := c.reauth(w, r, req, r.PostForm.Get("password"), r.PostForm.Get("code"), &d, &d.ErrorMFA)
	if !ok {
		return
	}
	if !mfa {
		c.securityDone(w, r, "mfa-off") // already off
		return
	}
	if err := c.Identity.DisableTOTP(r.Context(), res.Tokens.Access); err != nil {
		c.internalError(w, r, "turn MFA off", err)
		return
	}
	c.logger(r).Info("TOTP MFA turned off", "user_id", req.session.UserID)
	c.securityDone(w, r, "mfa-off")
}

// changePassword changes the person's password and ends their other
// sessions: the console's own at once, and every Cognito token (a global
// sign-out). This session stays, with a refresh token of the new password
// when one can be had without a code.
func (c *Console) changePassword(w http.ResponseWriter, r *http.Request, req *request) {
	proposed := r.PostForm.Get("new_password")
	d := pages.SecurityData{ErrorPassword: newPasswordProblem(proposed, r.PostForm.Get("new_password_again"))}
	if d.ErrorPassword != "" {
		c.renderSecurity(w, r, req, http.StatusBadRequest, d)
		return
	}
	current := r.PostForm.Get("password")
	res, mfa, ok := c.reauth(w, r, req, current, r.PostForm.Get("code"), &d, &d.ErrorPassword)
	if !ok {
		return
	}
	switch err := c.Identity.ChangePassword(r.Context(), res.Tokens.Access, current, proposed); {
	case errors.Is(err, cognito.ErrWeakPassword):
		d.ErrorPassword = "Choose a stronger password: at least 12 characters with upper and lower case letters, a digit and a symbol."
		c.renderSecurity(w, r, req, http.StatusBadRequest, d)
		return
	case err != nil:
		c.internalError(w, r, "change password", err)
		return
	}
	ended, err := c.Sessions.EndOtherSessions(r.Context(), req.session.UserID, req.session.Hash)
	if err != nil {
		c.internalError(w, r, "end the other sessions after a password change", err)
		return
	}
	if err := c.Identity.SignOutEverywhere(r.Context(), res.Tokens.Access); err != nil {
		c.internalError(w, r, "sign out everywhere after a password change", err)
		return
	}
	// The global sign-out revoked this session's refresh token too.
	sealed := ""
	if !mfa {
		if again, err := c.Identity.SignIn(r.Context(), req.session.Email, proposed); err == nil && again.Tokens.Refresh != "" {
			if ck, err := r.Cookie(CookieName); err == nil {
				sealed = member.SealRefresh(ck.Value, again.Tokens.Refresh)
			}
		}
	}
	if err := c.Sessions.SetSessionRefresh(r.Context(), req.session.Hash, sealed); err != nil && !errors.Is(err, member.ErrSessionEnded) {
		c.internalError(w, r, "keep the session after a password change", err)
		return
	}
	c.logger(r).Info("password changed", "user_id", req.session.UserID, "sessions_ended", ended)
	c.securityDone(w, r, "password")
}

// recheck checks the session's person in Cognito every RecheckEvery:
// disabled or deleted (their MCP connections revoked first) or signed out
// everywhere ends the session, to sign-in. false: the answer is written.
func (c *Console) recheck(w http.ResponseWriter, r *http.Request, ses *member.Session, cookie string, now time.Time) bool {
	if !ses.NeedsRecheck(now) {
		return true
	}
	why, err := c.personGone(r.Context(), *ses, cookie)
	if err != nil {
		if !ses.RecheckOverdue(now) {
			c.logger(r).Warn("re-check of the session's person failed; serving within the grace", "user_id", ses.UserID, "error", err.Error())
			return true
		}
		c.logger(r).Error("re-check of the session's person failed past the grace", "user_id", ses.UserID, "error", err.Error())
		w.Header().Set("Retry-After", strconv.Itoa(httpapi.RetryAfter))
		c.fail(w, r, http.StatusServiceUnavailable, "Your sign-in cannot be confirmed right now. Nothing was changed; try again in a minute.")
		return false
	}
	if why == "disabled" || why == "deleted" { // a failure keeps the session, to revoke at the next request
		if _, err := c.OAuth.Store.RevokePerson(r.Context(), ses.UserID, now); err != nil {
			c.internalError(w, r, "revoke the connections of a "+why+" person", err)
			return false
		}
	}
	if why != "" {
		c.endSession(w, r, *ses, why)
		return false
	}
	switch err := c.Sessions.MarkSessionChecked(r.Context(), ses.Hash, now); {
	case errors.Is(err, member.ErrSessionEnded):
		c.setCookie(w, "", -1)
		c.toSignIn(w, r)
		return false
	case err != nil:
		c.internalError(w, r, "record the session's check", err)
		return false
	}
	ses.CheckedAt = now
	return true
}

// personGone says why the session's person may no longer be signed in
// (empty: they may).
func (c *Console) personGone(ctx context.Context, ses member.Session, cookie string) (string, error) {
	p, err := c.Identity.Person(ctx, ses.Email)
	switch {
	case errors.Is(err, cognito.ErrNoSuchUser), err == nil && p.UserID != ses.UserID: // or another made with the email
		return "deleted", nil
	case err != nil:
		return "", err
	case !p.Enabled:
		return "disabled", nil
	case ses.Refresh == "":
		return "", nil
	}
	refresh, err := member.OpenRefresh(cookie, ses.Refresh)
	if err != nil {
		return "refresh token unreadable", nil
	}
	if _, err := c.Identity.Refresh(ctx, refresh); errors.Is(err, cognito.ErrSignedOut) {
		return "signed out everywhere", nil
	} else if err != nil {
		return "", err
	}
	return "", nil
}

// endSession deletes the session and sends the browser to sign-in.
func (c *Console) endSession(w http.ResponseWriter, r *http.Request, ses member.Session, why string) {
	if err := c.Sessions.DeleteSession(r.Context(), ses.Hash); err != nil {
		c.internalError(w, r, "end a session", err)
		return
	}
	c.logger(r).Info("session ended", "user_id", ses.UserID, "reason", why)
	c.setCookie(w, "", -1)
	c.toSignIn(w, r)
}
