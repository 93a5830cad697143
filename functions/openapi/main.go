// Command openapi is the OpenAPI Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("openapi", app.Function{HTTP: app.OpenAPI}) }
