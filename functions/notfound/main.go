// Command notfound is the NotFound Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("notfound", app.Function{HTTP: app.NotFound}) }
