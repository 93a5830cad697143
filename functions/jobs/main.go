// Command jobs is the Jobs Lambda function; internal/app/jobsfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/jobsfn"
)

func main() { app.Start("jobs", app.Function{HTTP: jobsfn.Build}) }
