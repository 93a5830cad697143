// Command generate is the Generate Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("generate", app.Function{HTTP: app.Generate}) }
