package console

import (
	"bytes"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	qrcode "github.com/skip2/go-qrcode"

	"genjobs/internal/cognito"
	"genjobs/internal/member"
)

// mfaData is the sign-in's code step: SOFTWARE_TOKEN_MFA (a code from the
// person's authenticator) or, where the pool requires MFA and the person
// has none, MFA_SETUP (the authenticator's key and QR code, then a code).
type mfaData struct {
	Email, Next string
	Challenge   string // Cognito's session for the step
	Setup       bool
	Secret      string
	QR          template.URL
	Error       string
}

// mfaStep shows the code step of a sign-in that Cognito asked one of.
func (c *Console) mfaStep(w http.ResponseWriter, r *http.Request, data signInData, res cognito.Result) {
	d := mfaData{Email: data.Email, Next: data.Next, Challenge: res.Session}
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
	c.render(w, r, http.StatusOK, "mfa", &view{Title: "Two-step sign-in", Data: d})
}

// answerMFA takes the code step's form.
func (c *Console) answerMFA(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	d := mfaData{Email: member.NormalizeEmail(r.PostForm.Get("email")), Next: localPath(r.PostForm.Get("next"), ""),
		Challenge: r.PostForm.Get("challenge"), Setup: r.PostForm.Get("setup") == "1"}
	if d.Setup {
		d.Secret = totpSecret(r.PostForm.Get("secret"))
		d.QR = qrCode(d.Email, d.Secret)
	}
	data := signInData{Email: d.Email, Next: d.Next}
	if d.Email == "" || d.Challenge == "" || len(d.Challenge) > 4096 || len(d.Email) > 254 {
		c.signInAgain(w, r, data)
		return
	}
	code, ok := totpCode(r.PostForm.Get("code"))
	if !ok {
		d.Error = "Enter the 6-digit code your authenticator app shows."
		c.render(w, r, http.StatusBadRequest, "mfa", &view{Title: "Two-step sign-in", Data: d})
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
		c.render(w, r, http.StatusUnauthorized, "mfa", &view{Title: "Two-step sign-in", Data: d})
		return
	case errors.Is(err, cognito.ErrChallengeExpired):
		c.signInAgain(w, r, data)
		return
	}
	c.afterCognito(w, r, data, res, err)
}

const msgWrongCode = "That code is not the one your authenticator app shows now. Nothing was changed; try the current code."

// signInAgain is the sign-in page after a step that took too long.
func (c *Console) signInAgain(w http.ResponseWriter, r *http.Request, data signInData) {
	data.Error, data.Challenge = "That step took too long. Sign in again.", ""
	c.render(w, r, http.StatusUnauthorized, "signin", &view{Title: "Sign in", Data: data})
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
func qrCode(email, secret string) template.URL {
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
	return template.URL(b.String()) // #nosec: our own PNG's base64, no input of the request
}
