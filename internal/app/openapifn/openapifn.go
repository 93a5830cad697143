// Package openapifn wires the openapi function: GET /openapi.json, the
// public OpenAPI document.
package openapifn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/httpapi"
	"genjobs/internal/openapi/published"
)

// Build builds the handler of the public OpenAPI document, built before
// deploy (package published).
func Build(d app.Deps) (http.Handler, error) {
	build := func(baseURL string) ([]byte, error) { return published.Document(baseURL), nil }
	h, err := httpapi.OpenAPI(build, d.API.BaseURL)
	if err != nil {
		return nil, err
	}
	return httpapi.Middleware(d.Log, h), nil
}
