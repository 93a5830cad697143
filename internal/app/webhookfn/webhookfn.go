// Package webhookfn wires the functions that sign webhooks: the deliverer
// and the JWKS. It stands apart from package app so that only their
// binaries link the KMS client and the JWT code.
package webhookfn

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"genjobs/internal/app"
	"genjobs/internal/app/blobs"
	"genjobs/internal/app/queues"
	"genjobs/internal/app/tables"
	"genjobs/internal/awsclient"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/netguard"
	"genjobs/internal/queue"
	"genjobs/internal/signing"
	"genjobs/internal/webhook"
)

// signer is the KMS key SIGNING_KEY_ID (or SIGNING_PREVIOUS_KEY_ID) names,
// with a client built from d.AWS (locally, moto's KMS). It does no I/O: the
// key's public half is fetched on first use.
func signer(d app.Deps, id string) (*signing.KMS, error) {
	p := d.Retries.KMS
	client := kms.NewFromConfig(d.AWS, func(o *kms.Options) {
		o.Retryer, o.RetryMaxAttempts = p.Retryer(), 0
		o.HTTPClient = p.HTTPClient(o.HTTPClient)
		o.APIOptions = p.APIOptions(o.APIOptions)
	})
	k := signing.NewKMS(client, id)
	k.Clock = d.Clock
	return k, nil
}

// JWKSKeyMaxAge is how long the JWKS serves a key before reading it from
// KMS again: an alias moved to a new key (or, locally, the key made again
// after moto restarted) is published within it. Its clients cache the
// document for 5 minutes anyway.
const JWKSKeyMaxAge = time.Minute

// JWKS builds the handler of GET /.well-known/jwks.json: the current key,
// and the previous one during a rotation.
func JWKS(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"SIGNING_KEY_ID": d.SigningKeyID}); err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Requests)
	pub := &signing.Publisher{Clock: d.Clock, OnPreviousError: func(err error) {
		d.Log.Warn("the previous signing key cannot be read; the JWKS lists the current key only",
			"key_id", d.PreviousSigningKeyID, "error", err.Error())
	}}
	current, err := signer(d, d.SigningKeyID)
	if err != nil {
		return nil, err
	}
	current.MaxAge = JWKSKeyMaxAge
	pub.Current = current
	if d.PreviousSigningKeyID != "" && d.PreviousSigningKeyID != d.SigningKeyID {
		previous, err := signer(d, d.PreviousSigningKeyID)
		if err != nil {
			return nil, err
		}
		previous.MaxAge = JWKSKeyMaxAge
		pub.Previous = previous
	}
	build := pub.Document
	return httpapi.Middleware(d.Log, httpapi.JWKS(build)), nil
}

// Deliverer builds the handler of the deliveries queue.
func Deliverer(d app.Deps) (app.SQSHandler, error) {
	err := app.Require(map[string]string{"TABLE_NAME": d.Table, "DELIVERIES_QUEUE_URL": d.DeliveriesQueueURL, "DELIVERIES_DLQ_URL": d.DeliveriesDLQURL, "RESULTS_BUCKET": d.ResultsBucket, "SIGNING_KEY_ID": d.SigningKeyID})
	if err != nil {
		return nil, err
	}
	d = d.WithRetries(awsclient.Events)
	s, err := signer(d, d.SigningKeyID)
	if err != nil {
		return nil, err
	}
	links := blobs.ResultLinks(d)
	guard := &netguard.Guard{AllowPrivate: d.AllowPrivateDestinations}
	del := &webhook.Deliverer{
		Metrics: d.Metrics,
		Store:   tables.Store(d),
		Queue:   queue.NewDeliveries(queues.Client(d), d.DeliveriesQueueURL, d.DeliveriesDLQURL),
		Sender:  &webhook.Sender{Client: webhook.NewClient(guard.Transport()), Signer: tokens{s}},
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
