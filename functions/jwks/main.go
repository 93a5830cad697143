// Command jwks is the JWKS Lambda function (GET /.well-known/jwks.json);
// internal/app/signers wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/signers"
)

func main() { app.Start("jwks", app.Function{HTTP: signers.JWKS}) }
