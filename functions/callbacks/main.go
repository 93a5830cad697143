// Command callbacks is the Callbacks Lambda function: the model providers'
// webhooks about routed jobs' predictions; internal/app/providerfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/providerfn"
)

func main() { app.Start("callbacks", app.Function{HTTP: providerfn.Callbacks}) }
