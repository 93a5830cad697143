// Command generate is the Generate Lambda function; internal/app/generatefn
// wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/generatefn"
)

func main() { app.Start("generate", app.Function{HTTP: generatefn.Build}) }
