// Command deliverer is the Deliverer Lambda function: it POSTs webhooks from
// the deliveries queue; internal/app/webhookfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/webhookfn"
)

func main() { app.Start("deliverer", app.Function{SQS: webhookfn.Deliverer}) }
