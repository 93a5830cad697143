// Command sweeper is the Sweeper Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("sweeper", app.Function{Schedule: app.Sweeper}) }
