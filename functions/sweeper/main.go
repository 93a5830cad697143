// Command sweeper is the Sweeper Lambda function; internal/app/queues wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/queues"
)

func main() { app.Start("sweeper", app.Function{Schedule: queues.Sweeper}) }
