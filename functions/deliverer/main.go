// Command deliverer is the Deliverer Lambda function: it POSTs webhooks from
// the deliveries queue; internal/app/delivererfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/delivererfn"
)

func main() { app.Start("deliverer", app.Function{SQS: delivererfn.Build}) }
