// Command notifier is the Notifier Lambda function: on the table's stream,
// it starts the webhook of each job that ended with one;
// internal/app/queues wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/queues"
)

func main() { app.Start("notifier", app.Function{Stream: queues.Notifier}) }
