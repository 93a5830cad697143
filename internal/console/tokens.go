package console

import (
	"errors"
	"net/http"
	"unicode/utf8"

	"genjobs/internal/auth"
	"genjobs/internal/console/pages"
	"genjobs/internal/store"
)

// Notices a redirect after a change shows (?done=...).
var notices = map[string]string{
	"revoked":            "Token revoked. Requests with it are refused within 5 seconds.",
	"api-on":             "API access is on: the workspace's tokens work.",
	"api-off":            "API access is off: every request with the workspace's tokens gets 401.",
	"role":               "Role changed.",
	"removed":            "Member removed, and their connections to this workspace revoked.",
	"connection-revoked": "Connection revoked. Its requests are refused within 5 seconds.",
	"switched":           "",
	"cancelled":          "Checkout cancelled: nothing was charged.",
	"member-kept":        "",
}

// tokensData is the tokens page's: the value of a token just created is
// taken from the holder for its one display (holdOnce, showNewToken).
func (c *Console) tokensData(r *http.Request, req *request) (pages.TokensData, error) {
	ws, err := c.Accounts.Workspace(r.Context(), req.current.WorkspaceID)
	if err != nil {
		return pages.TokensData{}, err
	}
	tokens, err := c.Tokens.Tokens(r.Context(), req.current.WorkspaceID)
	if err != nil {
		return pages.TokensData{}, err
	}
	return pages.TokensData{Acting: req.acting(), Tokens: tokens, APIEnabled: ws.APIEnabled, CanManage: req.current.Role.ManagesTokens()}, nil
}

func (c *Console) tokensPage(w http.ResponseWriter, r *http.Request, req *request) {
	data, err := c.tokensData(r, req)
	if err != nil {
		c.internalError(w, r, "read tokens", err)
		return
	}
	if id := r.URL.Query().Get("created"); id != "" {
		if err := c.showNewToken(r, req, &data, id); err != nil {
			c.internalError(w, r, "show the new token", err)
			return
		}
	}
	v := c.view(req, "tokens", "API tokens")
	v.Notice = notices[r.URL.Query().Get("done")]
	c.show(w, r, http.StatusOK, v, pages.Tokens(data))
}

// showNewToken puts the value held for token id's one display in data, or
// says it was shown (for an id that is one of the workspace's tokens).
func (c *Console) showNewToken(r *http.Request, req *request, data *pages.TokensData, id string) error {
	for _, t := range data.Tokens {
		if t.ID != id {
			continue
		}
		value, ok, err := c.takeOnce(r.Context(), req, onceToken(id))
		if err != nil {
			return err
		}
		if ok {
			data.NewToken, data.NewTokenName = value, t.Name
		} else {
			data.ShownOnce = t.Name
		}
	}
	return nil
}

// onceToken is the holder's id of a new token's value.
func onceToken(id string) string { return "token:" + id }

// MaxTokenName is the longest token name, in characters.
const MaxTokenName = 100

func (c *Console) createToken(w http.ResponseWriter, r *http.Request, req *request) {
	name := trimmed(r, "name")
	var nameErr string
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		nameErr = "Give the token a name, such as the app that will use it."
	case n > MaxTokenName || !utf8.ValidString(name):
		nameErr = "A token's name has at most 100 characters."
	}
	if nameErr != "" {
		data, err := c.tokensData(r, req)
		if err != nil {
			c.internalError(w, r, "read tokens", err)
			return
		}
		data.Name, data.NameError = name, nameErr
		c.show(w, r, http.StatusBadRequest, c.view(req, "tokens", "API tokens"), pages.Tokens(data))
		return
	}
	// The page after the redirect shows the session's workspace: the one
	// the token is made in, though another tab switched away meanwhile.
	if req.session.WorkspaceID != req.current.WorkspaceID {
		req.session.WorkspaceID, req.session.SeenAt = req.current.WorkspaceID, c.Clock.Now()
		if err := c.Sessions.UpdateSession(r.Context(), req.session); err != nil {
			c.internalError(w, r, "switch workspace", err)
			return
		}
	}
	token, hash := auth.NewToken()
	t := auth.Token{ID: auth.NewID("tok_"), WorkspaceID: req.current.WorkspaceID, Name: name, Hash: hash,
		Prefix: auth.Prefix(token), CreatedAt: c.Clock.Now(), CreatedBy: req.session.Email}
	// The value is held before the token exists, so that a token is never
	// made whose value nobody can be shown; the page after the redirect
	// shows it once, and a reload of that page makes nothing.
	if err := c.holdOnce(r.Context(), req, onceToken(t.ID), token); err != nil {
		c.internalError(w, r, "hold the new token", err)
		return
	}
	if err := c.Tokens.CreateToken(r.Context(), t); err != nil {
		// What was held is of no token: removed if the table answers, else
		// unreadable without this browser and gone within OnceLife.
		_, _, _ = c.takeOnce(r.Context(), req, onceToken(t.ID))
		c.internalError(w, r, "create token", err)
		return
	}
	c.logger(r).Info("token created", "workspace_id", t.WorkspaceID, "token_id", t.ID, "user_id", req.session.UserID)
	http.Redirect(w, r, Base+"/settings/api-tokens?created="+t.ID, http.StatusSeeOther)
}

// findToken is the current workspace's token named by the path, or a
// written 404.
func (c *Console) findToken(w http.ResponseWriter, r *http.Request, req *request) (auth.Token, bool) {
	tokens, err := c.Tokens.Tokens(r.Context(), req.current.WorkspaceID)
	if err != nil {
		c.internalError(w, r, "read tokens", err)
		return auth.Token{}, false
	}
	for _, t := range tokens {
		if t.ID == r.PathValue("id") {
			return t, true
		}
	}
	c.fail(w, r, http.StatusNotFound, "There is no such token in "+req.current.WorkspaceName+".")
	return auth.Token{}, false
}

func (c *Console) revokePage(w http.ResponseWriter, r *http.Request, req *request) {
	if !req.current.Role.ManagesTokens() {
		c.fail(w, r, http.StatusForbidden, "Your role ("+string(req.current.Role)+") does not allow revoking tokens.")
		return
	}
	t, ok := c.findToken(w, r, req)
	if !ok {
		return
	}
	c.show(w, r, http.StatusOK, c.view(req, "tokens", "Revoke "+t.Name), pages.Revoke(req.acting(), t))
}

func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request, req *request) {
	err := c.Tokens.RevokeToken(r.Context(), req.current.WorkspaceID, r.PathValue("id"), c.Clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "There is no such token in "+req.current.WorkspaceName+".")
		return
	}
	if err != nil {
		c.internalError(w, r, "revoke token", err)
		return
	}
	c.logger(r).Info("token revoked", "workspace_id", req.current.WorkspaceID, "token_id", r.PathValue("id"), "user_id", req.session.UserID)
	http.Redirect(w, r, Base+"/settings/api-tokens?done=revoked", http.StatusSeeOther)
}

func (c *Console) setAPIAccess(w http.ResponseWriter, r *http.Request, req *request) {
	var on bool
	switch r.PostForm.Get("enabled") {
	case "true":
		on = true
	case "false":
	default:
		c.fail(w, r, http.StatusBadRequest, "The form must say whether API access is to be on or off.")
		return
	}
	if err := c.Accounts.SetAPIEnabled(r.Context(), req.current.WorkspaceID, on); err != nil {
		c.internalError(w, r, "switch API access", err)
		return
	}
	c.logger(r).Info("API access switched", "workspace_id", req.current.WorkspaceID, "enabled", on, "user_id", req.session.UserID)
	done := "api-off"
	if on {
		done = "api-on"
	}
	http.Redirect(w, r, Base+"/settings/api-tokens?done="+done, http.StatusSeeOther)
}
