package console

import (
	"net/http"
	"strings"

	"genjobs/internal/cognito"
	"genjobs/internal/console/pages"
	"genjobs/internal/member"
)

// msgBadCredentials is the one answer to a wrong password and to an
// unknown email alike.
const msgBadCredentials = "That email and password do not match an account."

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	c.show(w, r, http.StatusOK, &view{Title: "Sign in", Notice: signInNotices[r.URL.Query().Get("done")]},
		pages.SignIn(pages.SignInData{Next: localPath(r.URL.Query().Get("next"), "")}))
}

// MaxPasswordBytes bounds what a sign-in form may send (Cognito's own limit
// is 256 characters).
const MaxPasswordBytes = 1024

func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	email := member.NormalizeEmail(r.PostForm.Get("email"))
	password := r.PostForm.Get("password")
	data := pages.SignInData{Email: email, Next: localPath(r.PostForm.Get("next"), "")}
	if email == "" || password == "" || len(password) > MaxPasswordBytes || len(email) > 254 {
		data.Error = "Enter your email and password."
		c.show(w, r, http.StatusBadRequest, &view{Title: "Sign in"}, pages.SignIn(data))
		return
	}
	t := c.throttleOf(r, scopeSignIn, email)
	if c.throttled(w, r, t) {
		return
	}
	res, err := c.Identity.SignIn(r.Context(), email, password)
	c.afterCognito(w, r, data, res, c.counted(r, t, err))
}

func (c *Console) setPassword(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	data := pages.SignInData{Email: member.NormalizeEmail(r.PostForm.Get("email")), Next: localPath(r.PostForm.Get("next"), ""),
		Challenge: r.PostForm.Get("challenge")}
	password, again := r.PostForm.Get("password"), r.PostForm.Get("password_again")
	switch {
	case data.Email == "" || data.Challenge == "" || len(data.Challenge) > 4096:
		c.show(w, r, http.StatusBadRequest, &view{Title: "Sign in"}, pages.SignIn(pages.SignInData{Error: "Sign in again to set your password."}))
		return
	default:
		data.Error = newPasswordProblem(password, again)
	}
	if data.Error != "" {
		c.show(w, r, http.StatusBadRequest, &view{Title: "Choose a password"}, pages.SetPassword(data))
		return
	}
	t := c.throttleOf(r, scopeSignIn, data.Email)
	if c.throttled(w, r, t) {
		return
	}
	res, err := c.Identity.SetNewPassword(r.Context(), data.Email, data.Challenge, password)
	c.afterCognito(w, r, data, res, c.counted(r, t, err))
}

// newPasswordProblem is what is wrong with a new password typed twice, or
// "" (Cognito checks the pool's policy beyond the length).
func newPasswordProblem(password, again string) string {
	switch {
	case password != again:
		return "The two passwords differ."
	case len(password) < 12 || len(password) > MaxPasswordBytes:
		return "Choose a password of at least 12 characters."
	}
	return ""
}

// afterCognito answers a sign-in step: the set-password page, an error
// beside the form, or a new session.
func (c *Console) afterCognito(w http.ResponseWriter, r *http.Request, data pages.SignInData, res cognito.Result, err error) {
	switch {
	case err != nil:
		c.signInRefused(w, r, data, err)
		return
	case res.NewPasswordRequired:
		data.Challenge, data.Error = res.Session, ""
		c.show(w, r, http.StatusOK, &view{Title: "Choose a password"}, pages.SetPassword(data))
		return
	case res.MFARequired, res.MFASetupRequired:
		c.mfaStep(w, r, data, res) // mfa.go
		return
	}
	now := c.Clock.Now()
	value := member.NewSecret()
	// Signing in is itself a check of the person (CheckedAt); the refresh
	// token lets later checks see a sign-out everywhere (security.go).
	ses := member.Session{Hash: member.HashSecret(value), UserID: res.Identity.UserID, Email: member.NormalizeEmail(res.Identity.Email),
		CSRF: member.NewSecret(), CreatedAt: now, SeenAt: now, CheckedAt: now, Refresh: member.SealRefresh(value, res.Tokens.Refresh)}
	if all, err := c.Members.Memberships(r.Context(), ses.UserID); err == nil && len(all) > 0 {
		ses.WorkspaceID = all[0].WorkspaceID
	}
	if err := c.Sessions.CreateSession(r.Context(), ses); err != nil {
		c.internalError(w, r, "create session", err)
		return
	}
	c.logger(r).Info("signed in", "user_id", ses.UserID)
	c.setCookie(w, value, int(member.MaxAge.Seconds()))
	http.Redirect(w, r, localPath(data.Next, Base+"/settings/api-tokens"), http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, req *request) {
	if err := c.Sessions.DeleteSession(r.Context(), req.session.Hash); err != nil {
		c.internalError(w, r, "sign out", err)
		return
	}
	c.setCookie(w, "", -1)
	http.Redirect(w, r, Base+"/sign-in?signed_out=1", http.StatusSeeOther)
}

// trimmed reads a form field without surrounding space.
func trimmed(r *http.Request, name string) string { return strings.TrimSpace(r.PostForm.Get(name)) }
