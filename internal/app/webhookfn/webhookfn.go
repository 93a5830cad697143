// Package webhookfn wires the deliverer function: it signs webhooks
// (package signers) and POSTs them from the deliveries queue.
package webhookfn

import (
	"context"

	"genjobs/internal/app"
	"genjobs/internal/app/queues"
	"genjobs/internal/app/signers"
	"genjobs/internal/app/tables"
	"genjobs/internal/awsclient"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/netguard"
	"genjobs/internal/queue"
	"genjobs/internal/signing"
	"genjobs/internal/webhook"
	"genjobs/internal/xray"
)

// Deliverer builds the handler of the deliveries queue.
func Deliverer(d app.Deps) (app.SQSHandler, error) {
	err := app.Require(map[string]string{"TABLE_NAME": d.Table, "DELIVERIES_QUEUE_URL": d.DeliveriesQueueURL, "DELIVERIES_DLQ_URL": d.DeliveriesDLQURL, "RESULTS_BUCKET": d.ResultsBucket, "SIGNING_KEY_ID": d.SigningKeyID})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Events)
	s := signers.Signer(d, d.SigningKeyID)
	links := d.ResultLinks()
	guard := &netguard.Guard{AllowPrivate: d.AllowPrivateDestinations}
	del := &webhook.Deliverer{
		Metrics: d.Metrics,
		Store:   tables.Store(d),
		Queue:   queue.NewDeliveries(queues.Client(d), d.DeliveriesQueueURL, d.DeliveriesDLQURL),
		// The POSTs are in the invocation's X-Ray trace, by host only:
		// a receiver's path may hold its token.
		Sender: &webhook.Sender{Client: webhook.NewClient(xray.Lambda.HostTransport(guard.Transport())), Signer: tokens{s}},
		Render: func(ctx context.Context, j *job.Job) ([]byte, error) {
			return httpapi.RecordBody(ctx, links, j)
		},
		Schedule: d.WebhookSchedule,
		ClaimFor: webhook.DefaultClaimFor,
		Clock:    d.Clock,
		Log:      d.Log,
	}
	return app.WithMargin(del.HandleSQS), nil
}

// tokens signs attempts with a signing key.
type tokens struct{ s signing.Signer }

func (t tokens) WebhookToken(ctx context.Context, c webhook.Claims) (string, error) {
	return signing.WebhookToken(ctx, t.s, signing.WebhookClaims{
		Issuer: c.Issuer, Audience: c.Audience, Subject: c.Subject, ID: c.ID, IssuedAt: c.IssuedAt, Body: c.Body,
	})
}
