// Package notfoundfn wires the notfound function: the $default route.
package notfoundfn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/httpapi"
)

// Build builds the $default route's handler.
func Build(d app.Deps) (http.Handler, error) {
	return httpapi.Middleware(d.Log, httpapi.NotFound()), nil
}
