// Command worker is the Worker Lambda function: the jobs queue's worker;
// internal/app/workerfn wires it, as it wires functions/lightworker (the
// same code on the light jobs' queue).
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/workerfn"
)

func main() { app.Start("worker", app.Function{SQS: workerfn.Build}) }
