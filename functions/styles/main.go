// Command styles is the Styles Lambda function; internal/app/stylesfn wires
// it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/stylesfn"
)

func main() { app.Start("styles", app.Function{HTTP: stylesfn.Build}) }
