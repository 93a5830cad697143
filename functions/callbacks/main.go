// Command callbacks is the Callbacks Lambda function: the model providers'
// webhooks about routed jobs' predictions; internal/app/callbacksfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/callbacksfn"
)

func main() { app.Start("callbacks", app.Function{HTTP: callbacksfn.Build}) }
