// Command worker is the Worker Lambda function; internal/app wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/workerfn"
)

func main() { app.Start("worker", app.Function{SQS: workerfn.Build}) }
