package console

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	qrcode "github.com/skip2/go-qrcode"

	"genjobs/internal/cognito"
	"genjobs/internal/console/pages"
	"genjobs/internal/member"
)

// mfaStep shows the code step of a sign-in that Cognito asked one of.
func (c *Console) mfaStep(w http.ResponseWriter, r *http.Request, data pages.SignInData, res cognito.Result) {
	d := pages.MFAData{Email: data.Email, Next: data.Next, Challenge: res.Session}
	if res.MFASetupRequired {
		secret, session, err := c.Identity.BeginMFASetup(r.Context(), res.Session)
		if errors.Is(err, cognito.ErrChallengeExpired) {
			c.signInAgain(w, r, data)
			return
		}
		if err != nil {
			c.signInRefused(w, r, data, err) // a message, or an internal error's page
			return
		}
		d.Setup, d.Secret, d.Challenge = true, secret, session
		d.QR = qrCode(d.Email, secret)
	}
	c.show(w, r, http.StatusOK, &view{Title: "Two-step sign-in"}, pages.MFA(d))
}

// answerMFA takes the code step's form.
func (c *Console) answerMFA(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	d := pages.MFAData{Email: member.NormalizeEmail(r.PostForm.Get("email")), Next: localPath(r.PostForm.Get("next"), ""),
		Challenge: r.PostForm.Get("challenge"), Setup: r.PostForm.Get("setup") == "1"}
	if d.Setup {
		d.Secret = totpSecret(r.PostForm.Get("secret"))
		d.QR = qrCode(d.Email, d.Secret)
	}
	data := pages.SignInData{Email: d.Email, Next: d.Next}
	if d.Email == "" || d.Challenge == "" || len(d.Challenge) > 4096 || len(d.Email) > 254 {
		c.signInAgain(w, r, data)
		return
	}
	code, ok := totpCode(r.PostForm.Get("code"))
	if !ok {
		d.Error = "Enter the 6-digit code your authenticator app shows."
		c.show(w, r, http.StatusBadRequest, &view{Title: "Two-step sign-in"}, pages.MFA(d))
		return
	}
	t := c.throttleOf(r, scopeSignIn, d.Email) // throttle.go: wrong codes count
	if c.throttled(w, r, t) {
		return
	}
	var (
		res cognito.Result
		err error
	)
	if d.Setup {
		res, err = c.Identity.FinishMFASetup(r.Context(), d.Email, d.Challenge, code)
	} else {
		res, err = c.Identity.AnswerMFA(r.Context(), d.Email, d.Challenge, code)
	}
	err = c.counted(r, t, err)
	switch {
	case errors.Is(err, cognito.ErrWrongCode):
		d.Error = msgWrongCode
		c.show(w, r, http.StatusUnauthorized, &view{Title: "Two-step sign-in"}, pages.MFA(d))
		return
	case errors.Is(err, cognito.ErrChallengeExpired):
		c.signInAgain(w, r, data)
		return
	}
	c.afterCognito(w, r, data, res, err)
}

const msgWrongCode = "That code is not the one your authenticator app shows now. Nothing was changed; try the current code."

// signInAgain is the sign-in page after a step that took too long.
func (c *Console) signInAgain(w http.ResponseWriter, r *http.Request, data pages.SignInData) {
	data.Error, data.Challenge = "That step took too long. Sign in again.", ""
	c.show(w, r, http.StatusUnauthorized, &view{Title: "Sign in"}, pages.SignIn(data))
}

// totpCode reads a code as people type it (spaces allowed): 6 digits.
func totpCode(s string) (string, bool) {
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	if len(s) != 6 || strings.Trim(s, "0123456789") != "" {
		return "", false
	}
	return s, true
}

// totpSecret is s when it is an authenticator key (base32, as Cognito
// gives it), else empty: a key sent back by a form is only shown again.
func totpSecret(s string) string {
	if len(s) == 0 || len(s) > 128 || strings.Trim(strings.ToUpper(s), "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567=") != "" {
		return ""
	}
	return s
}

// qrCode draws, on the server, the QR code of the authenticator key for
// email, as a data: URL of a PNG (the CSP allows img-src data:). Empty
// when there is no key.
func qrCode(email, secret string) templ.SafeURL {
	if secret == "" {
		return ""
	}
	u := "otpauth://totp/" + url.PathEscape("Genjobs:"+email) + "?" + url.Values{"secret": {secret}, "issuer": {"Genjobs"}}.Encode()
	png, err := qrcode.Encode(u, qrcode.Medium, 256)
	if err != nil {
		return ""
	}
	var b bytes.Buffer
	b.WriteString("data:image/png;base64,")
	b.WriteString(base64.StdEncoding.EncodeToString(png))
	return templ.SafeURL(b.String()) // #nosec: our own PNG's base64, no input of the request
}
