// Package notifierfn wires the notifier function: on the table's stream, it
// starts the webhook delivery of each job that ended with one.
package notifierfn

import (
	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/queue"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/webhook"
)

// Build builds the handler of the table's stream.
func Build(d app.Deps) (app.StreamHandler, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "DELIVERIES_QUEUE_URL": d.Webhooks.Queue,
		"DELIVERIES_DLQ_URL": d.Webhooks.DLQ,
	}); err != nil {
		return nil, err
	}
	n := &webhook.Notifier{
		Store: deliveriesdb.New(dynamodbwire.Store(d)), Queue: queue.NewDeliveries(sqswire.Client(d), d.Webhooks.Queue, d.Webhooks.DLQ),
		Clock: d.Clock, Log: d.Log,
	}
	return n.HandleStream, nil
}
