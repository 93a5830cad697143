// Package delivererfn wires the deliverer function: it signs webhooks
// (package kmswire) and POSTs them from the deliveries queue.
package delivererfn

import (
	"context"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/kmswire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/queue"
	"genjobs/internal/signing"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/webhook"
	"genjobs/internal/xray"
)

// Build builds the handler of the deliveries queue.
func Build(d app.Deps) (app.SQSHandler, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "DELIVERIES_QUEUE_URL": d.Webhooks.Queue,
		"DELIVERIES_DLQ_URL": d.Webhooks.DLQ, "RESULTS_BUCKET": d.Buckets.Results,
		"SIGNING_KEY_ID": d.Signing.KeyID,
	}); err != nil {
		return nil, err
	}
	s := kmswire.Signer(d, d.Signing.KeyID)
	links := d.ResultLinks()
	del := &webhook.Deliverer{
		Metrics: d.Metrics,
		Store:   deliveriesdb.New(dynamodbwire.Store(d)),
		Queue:   queue.NewDeliveries(sqswire.Client(d), d.Webhooks.Queue, d.Webhooks.DLQ),
		// The POSTs are in the invocation's X-Ray trace, by host only:
		// a receiver's path may hold its token.
		Sender: &webhook.Sender{Client: webhook.NewClient(xray.Lambda.HostTransport(d.Network.Guard().Transport())), Signer: tokens{s}},
		Render: func(ctx context.Context, j *job.Job) ([]byte, error) {
			return httpapi.RecordBody(ctx, links, j)
		},
		Schedule: d.Webhooks.Schedule,
		ClaimFor: webhook.DefaultClaimFor,
		Clock:    d.Clock,
		Log:      d.Log,
	}
	return del.HandleSQS, nil
}

// tokens signs attempts with a signing key.
type tokens struct{ s signing.Signer }

func (t tokens) WebhookToken(ctx context.Context, c webhook.Claims) (string, error) {
	return signing.WebhookToken(ctx, t.s, signing.WebhookClaims{
		Issuer: c.Issuer, Audience: c.Audience, Subject: c.Subject, ID: c.ID, IssuedAt: c.IssuedAt, Body: c.Body,
	})
}
