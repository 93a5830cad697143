// Command jwks is the JWKS Lambda function (GET /.well-known/jwks.json);
// internal/app/jwksfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/jwksfn"
)

func main() { app.Start("jwks", app.Function{HTTP: jwksfn.Build}) }
