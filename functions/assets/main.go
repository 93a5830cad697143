// Command assets is the Assets Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("assets", app.Function{HTTP: app.Assets}) }
