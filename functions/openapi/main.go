// Command openapi is the OpenAPI Lambda function; internal/app/openapifn
// wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/openapifn"
)

func main() { app.Start("openapi", app.Function{HTTP: openapifn.Build}) }
