// Command sweeper is the Sweeper Lambda function; internal/app/sweeperfn
// wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/sweeperfn"
)

func main() { app.Start("sweeper", app.Function{Schedule: sweeperfn.Build}) }
