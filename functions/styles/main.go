// Command styles is the Styles Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("styles", app.Function{HTTP: app.Styles}) }
