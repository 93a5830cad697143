// Command worker is the Worker Lambda function; internal/app wires it.
package main

import "genjobs/internal/app"

func main() { app.Start("worker", app.Function{SQS: app.Worker}) }
