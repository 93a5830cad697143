// Command usage is the Usage Lambda function; internal/app/usagefn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/usagefn"
)

func main() { app.Start("usage", app.Function{HTTP: usagefn.Build}) }
