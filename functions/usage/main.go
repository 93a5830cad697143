// Command usage is the Usage Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("usage", app.Function{HTTP: app.Usage}) }
