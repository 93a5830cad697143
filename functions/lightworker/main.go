// Command lightworker is the LightWorkerFunction: the worker's code on the
// light jobs' queue, deployed with less memory (template.yaml);
// internal/app/workerfn wires it, as it wires functions/worker.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/workerfn"
)

func main() { app.Start("lightworker", app.Function{SQS: workerfn.Build}) }
