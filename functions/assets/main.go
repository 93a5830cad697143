// Command assets is the Assets Lambda function; internal/app/blobs wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/blobs"
)

func main() { app.Start("assets", app.Function{HTTP: blobs.Assets}) }
