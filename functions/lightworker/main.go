// Command lightworker is the LightWorkerFunction: the worker's code, deployed
// with less memory for light jobs (template.yaml); internal/app wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/workerfn"
)

func main() { app.Start("lightworker", app.Function{SQS: workerfn.Build}) }
