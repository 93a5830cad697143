// Package stylesfn wires the styles function: GET /styles and
// GET /styles/{id}/share/link.
package stylesfn

import (
	"fmt"
	"net/http"
	"net/url"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/httpapi"
	"genjobs/internal/store"
	"genjobs/internal/store/stylesdb"
)

// Build builds the styles function's handler. APP_URL, the web
// application's address, prefixes share links and avatars; empty (the
// template's default), it is https://{the request's API domain}/app
// (httpapi.AppURL).
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"TABLE_NAME": d.Table}); err != nil {
		return nil, err
	}
	st, auth := dynamodbwire.API(d)
	h, err := Handler(d, st, auth)
	if err != nil {
		return nil, err
	}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}

// Handler is the styles routes' handler on st and a (the styles
// function's, and the MCP function's list_styles tool's); it checks APP_URL
// when it is set.
func Handler(d app.Deps, st *store.Store, a httpapi.Authenticator) (*httpapi.Styles, error) {
	if d.API.AppURL != "" {
		if u, err := url.Parse(d.API.AppURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("APP_URL must be an absolute http(s) URL without query or fragment, not %q", d.API.AppURL)
		}
	}
	return &httpapi.Styles{Auth: a, Styles: stylesdb.New(st), Clock: d.Clock, AppURL: d.API.AppURL}, nil
}
