// Command stripewebhook is the Stripe webhook Lambda function, POST
// /webhooks/stripe; internal/app/stripewebhookfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/stripewebhookfn"
)

func main() { app.Start("stripewebhook", app.Function{HTTP: stripewebhookfn.Build}) }
