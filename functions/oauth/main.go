// Command oauth is the authorization server of MCP connections as a Lambda
// function; internal/app/oauthfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/oauthfn"
)

func main() { app.Start("oauth", app.Function{HTTP: oauthfn.Build}) }
