// Command styles is the Styles Lambda function; internal/app/tables wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/tables"
)

func main() { app.Start("styles", app.Function{HTTP: tables.Styles}) }
