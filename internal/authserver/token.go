package authserver

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"genjobs/internal/httpapi"
	"genjobs/internal/oauthtoken"
	"genjobs/internal/signing"
	"genjobs/internal/store/oauthdb"
)

// MaxFormBytes bounds a token or revocation request's body.
const MaxFormBytes = 16 << 10

// codeVerifier reports whether s is RFC 7636's verifier: 43 to 128
// unreserved characters.
func codeVerifier(s string) bool { return pkceChars(s, 43, 128, "._~-") }

// readForm reads an application/x-www-form-urlencoded body (the query
// string is not read): each parameter at most once (RFC 6749 section 3.2).
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, *oidc.Error) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		return nil, oidc.ErrInvalidRequest().WithDescription("the body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		return nil, oidc.ErrInvalidRequest().WithDescription("%s", fmt.Sprintf("the body is not a form of at most %d bytes", MaxFormBytes))
	}
	for p, v := range r.PostForm {
		if len(v) > 1 {
			return nil, oidc.ErrInvalidRequest().WithDescription("%s", p+" is given more than once")
		}
	}
	return r.PostForm, nil
}

// token is POST /oauth/token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	form, e := readForm(w, r)
	if e == nil {
		var c Client
		if c, e = s.authenticate(r, form); e == nil {
			switch form.Get("grant_type") {
			case "authorization_code":
				e = s.exchangeCode(w, r, c, form)
			case "refresh_token":
				e = s.refresh(w, r, c, form)
			case "":
				e = oidc.ErrInvalidRequest().WithDescription("grant_type is required")
			default:
				e = oidc.ErrUnsupportedGrantType().WithDescription("grant_type must be authorization_code or refresh_token")
			}
		}
	}
	if e != nil {
		writeError(w, r, e)
	}
}

// grantError is the answer for the store's refusal of a code or refresh
// token: invalid_grant, or server_error for anything else.
func grantError(err error, what string) *oidc.Error {
	switch {
	case errors.Is(err, oauthdb.ErrNotFound):
		return oidc.ErrInvalidGrant().WithDescription("%s", "unknown "+what)
	case errors.Is(err, oauthdb.ErrExpired):
		return oidc.ErrInvalidGrant().WithDescription("%s", "the "+what+" has expired")
	case errors.Is(err, oauthdb.ErrReplayed):
		return oidc.ErrInvalidGrant().WithDescription("%s", "the "+what+" was already used; the connection it gave is revoked")
	case errors.Is(err, oauthdb.ErrRevoked):
		return oidc.ErrInvalidGrant().WithDescription("the connection was revoked")
	}
	return oidc.ErrServerError().WithParent(err)
}

// exchangeCode is the authorization_code grant: the code must be the
// client's, for the same redirect URI and resource, and the verifier must
// match its S256 challenge; then the code is redeemed once, for a new grant.
func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, c Client, form url.Values) *oidc.Error {
	ctx, now := r.Context(), s.Clock.Now()
	if form.Get("code") == "" {
		return oidc.ErrInvalidRequest().WithDescription("code is required")
	}
	code, err := s.Store.Code(ctx, form.Get("code"), now)
	if err != nil {
		return grantError(err, "code")
	}
	switch {
	case code.ClientID != c.ID:
		return oidc.ErrInvalidGrant().WithDescription("the code was issued to another client")
	case form.Get("redirect_uri") != code.RedirectURI:
		return oidc.ErrInvalidGrant().WithDescription("redirect_uri is not the one the code was issued for")
	case !codeVerifier(form.Get("code_verifier")):
		return oidc.ErrInvalidGrant().WithDescription("code_verifier is required: 43 to 128 characters")
	case !oidc.VerifyCodeChallenge(&oidc.CodeChallenge{Challenge: code.Challenge, Method: oidc.CodeChallengeMethodS256}, form.Get("code_verifier")):
		return oidc.ErrInvalidGrant().WithDescription("code_verifier does not match the code_challenge")
	}
	if res, ok := form["resource"]; ok && res[0] != code.Resource {
		return oidc.ErrInvalidTarget().WithDescription("%s", "resource must be "+code.Resource)
	}
	g := oauthdb.Grant{
		ID: oauthdb.NewID("gr_"), ClientID: c.ID, ClientName: c.Name, RedirectURI: code.RedirectURI,
		UserID: code.UserID, WorkspaceID: code.WorkspaceID, Scope: code.Scope, Resource: code.Resource, CreatedAt: now,
	}
	// Signed before the code is spent: a KMS outage is then a 503 the
	// client retries with the same code, not a spent code whose retry
	// would revoke the connection.
	access, e := s.sign(r, g)
	if e != nil {
		return e
	}
	refresh := oauthdb.NewSecret()
	if err := s.Store.Redeem(ctx, form.Get("code"), g, refresh, now); err != nil {
		return grantError(err, "code")
	}
	answer(w, g, access, refresh)
	return nil
}

// refresh is the refresh_token grant: the token must be the client's and
// usable; it is replaced by a new one.
func (s *Server) refresh(w http.ResponseWriter, r *http.Request, c Client, form url.Values) *oidc.Error {
	ctx, now := r.Context(), s.Clock.Now()
	old := form.Get("refresh_token")
	if old == "" {
		return oidc.ErrInvalidRequest().WithDescription("refresh_token is required")
	}
	g, _, err := s.Store.RefreshGrant(ctx, old, now)
	if err != nil {
		return grantError(err, "refresh token")
	}
	if g.ClientID != c.ID {
		return oidc.ErrInvalidGrant().WithDescription("the refresh token was issued to another client")
	}
	if res, ok := form["resource"]; ok && res[0] != g.Resource {
		return oidc.ErrInvalidTarget().WithDescription("%s", "resource must be "+g.Resource)
	}
	if _, ok := checkScope(form.Get("scope")); !ok {
		return oidc.ErrInvalidScope().WithDescription("%s", "the only scope is "+Scope)
	}
	// Signed before the old token is spent, as for a code.
	access, e := s.sign(r, g)
	if e != nil {
		return e
	}
	next := oauthdb.NewSecret()
	if _, err = s.Store.Rotate(ctx, old, next, now); err != nil {
		return grantError(err, "refresh token")
	}
	answer(w, g, access, next)
	return nil
}

// sign makes an access token for g.
func (s *Server) sign(r *http.Request, g oauthdb.Grant) (string, *oidc.Error) {
	at, err := oauthtoken.Issue(r.Context(), s.Signer, oauthtoken.Claims{
		Issuer: s.issuer(r), Audience: g.Resource, Subject: g.UserID, Workspace: g.WorkspaceID, Scope: g.Scope,
		ClientID: g.ClientID, Grant: g.ID, ID: oauthdb.NewID("at_"), IssuedAt: s.Clock.Now(),
	})
	if err != nil {
		return "", oidc.ErrServerError().WithParent(err)
	}
	return at, nil
}

// answer is RFC 6749's token answer.
func answer(w http.ResponseWriter, g oauthdb.Grant, access, refresh string) {
	noStore(w)
	httpapi.WriteJSON(w, http.StatusOK, &oidc.AccessTokenResponse{
		AccessToken: access, TokenType: oidc.BearerToken, ExpiresIn: uint64(oauthtoken.Lifetime.Seconds()),
		RefreshToken: refresh, Scope: oidc.SpaceDelimitedArray{g.Scope},
	})
}

func (s *Server) issuer(r *http.Request) string { return strings.TrimSuffix(s.base(r), "/") }

// revoke is POST /oauth/revoke (RFC 7009): a refresh token or an access
// token of the client revokes the grant it belongs to, and with it every
// token of the connection. An unknown or malformed token is answered 200
// as well (section 2.2); another client's token is refused.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	form, e := readForm(w, r)
	if e == nil {
		var c Client
		if c, e = s.authenticate(r, form); e == nil {
			e = s.revokeToken(r, c, form.Get("token"))
		}
	}
	if e != nil {
		writeError(w, r, e)
		return
	}
	noStore(w)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) revokeToken(r *http.Request, c Client, token string) *oidc.Error {
	ctx, now := r.Context(), s.Clock.Now()
	if token == "" {
		return oidc.ErrInvalidRequest().WithDescription("token is required")
	}
	var grantID, owner string
	if g, _, err := s.Store.RefreshGrant(ctx, token, now); err == nil {
		grantID, owner = g.ID, g.ClientID
	} else if !errors.Is(err, oauthdb.ErrNotFound) {
		return oidc.ErrServerError().WithParent(err)
	} else if strings.Count(token, ".") == 2 {
		pub, err := s.Signer.PublicKey(ctx)
		if err != nil {
			return oidc.ErrServerError().WithParent(err)
		}
		claims, err := oauthtoken.Verify(token, signing.NewKeySet(pub), oauthtoken.Expect{
			Issuer: s.issuer(r), Audience: Resource(s.issuer(r)), AnyTime: true,
		})
		if err == nil {
			grantID, owner = claims.Grant, claims.ClientID
		}
	}
	if grantID == "" {
		return nil
	}
	if owner != c.ID {
		return &oidc.Error{ErrorType: oidc.UnauthorizedClient, Description: "the token was issued to another client"}
	}
	if err := s.Store.RevokeGrant(ctx, grantID, now); err != nil && !errors.Is(err, oauthdb.ErrNotFound) {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}
