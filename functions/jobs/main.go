// Command jobs is the Jobs Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("jobs", app.Function{HTTP: app.Jobs}) }
