// Command usage is the Usage Lambda function; internal/app/tables wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/tables"
)

func main() { app.Start("usage", app.Function{HTTP: tables.Usage}) }
