// Command jwks is the JWKS Lambda function (GET /.well-known/jwks.json);
// internal/app/webhookfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/webhookfn"
)

func main() { app.Start("jwks", app.Function{HTTP: webhookfn.JWKS}) }
