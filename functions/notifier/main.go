// Command notifier is the Notifier Lambda function: on the table's stream,
// it starts the webhook of each job that ended with one;
// internal/app/notifierfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/notifierfn"
)

func main() { app.Start("notifier", app.Function{Stream: notifierfn.Build}) }
