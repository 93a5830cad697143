// Command provider is the Provider Lambda function: the steps of jobs routed
// to a model provider, from the provider queue; internal/app/providerfn
// wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/providerfn"
)

func main() { app.Start("provider", app.Function{SQS: providerfn.Build}) }
