// Command notfound is the NotFound Lambda function; internal/app/notfoundfn
// wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/notfoundfn"
)

func main() { app.Start("notfound", app.Function{HTTP: notfoundfn.Build}) }
