// Command assets is the Assets Lambda function: POST /assets and a
// workspace's uploaded inputs; internal/app/assetsfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/assetsfn"
)

func main() { app.Start("assets", app.Function{HTTP: assetsfn.Build}) }
