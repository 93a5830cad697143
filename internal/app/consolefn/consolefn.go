// Package consolefn wires the console function (docs/console.md): the
// table, the Cognito user pool, the Stripe keys in Secrets Manager,
// Stripe's API, the price file (the packs of compute units), the
// results and assets buckets' presigned URLs for the jobs pages, and the
// queues a job page's "Cancel" (the backlog's promotion) and "Deliver
// again" send to. It is the only function that links the Cognito client.
package consolefn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/awsclient"
	"genjobs/internal/billing"
	"genjobs/internal/blob/s3url"
	"genjobs/internal/checkout"
	"genjobs/internal/cognito"
	"genjobs/internal/console"
	"genjobs/internal/httpapi"
	"genjobs/internal/queue"
	"genjobs/internal/secrets"
	"genjobs/internal/store/consoledb"
)

// Build builds the console's handler: the pages under /app (Stripe's
// webhook is the stripewebhook function's). It does no I/O: the pool's keys and the Stripe
// keys are read at first use.
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "COGNITO_USER_POOL_ID": d.Console.UserPoolID,
		"COGNITO_CLIENT_ID": d.Console.ClientID, "STRIPE_SECRET_ID": d.Console.StripeSecretID,
		"JOBS_QUEUE_URL": d.Queues.Jobs, "DELIVERIES_QUEUE_URL": d.Webhooks.Queue,
		"RESULTS_BUCKET": d.Buckets.Results, "ASSETS_BUCKET": d.Buckets.Assets,
	}); err != nil {
		return nil, err
	}
	id, err := cognito.New(d.AWS, d.Retries.Cognito,
		cognito.Config{PoolID: d.Console.UserPoolID, ClientID: d.Console.ClientID, JWKSURL: d.Console.JWKSURL, Issuer: d.Console.Issuer},
		cognito.VerifierOptions{Clock: d.Clock})
	if err != nil {
		return nil, err
	}
	keys := secrets.NewStripe(secrets.NewClient(d.AWS, d.Retries.SecretsManager), d.Console.StripeSecretID)
	results := d.ResultLinks()
	// The packs' prices: compute_units_per_usd of the same price file as
	// the API's, read (and checked) here at init, without the price
	// list's rules and the schemas they need.
	perUSD, err := billing.OverrideUnitsPerUSD([]byte(d.API.PricesJSON))
	if err != nil {
		return nil, err
	}
	st := dynamodbwire.Store(d)
	sq := sqswire.Client(d)
	c, err := console.New(console.Config{
		Store: consoledb.New(st), Identity: id, Payments: checkout.New(keys, d.Console.StripeAPIBase), Prices: conversion(perUSD),
		Clock: d.Clock, Log: d.Log, AppURL: d.API.AppURL, Results: results, ResultsOrigin: results.Origin(),
		Assets:   s3url.NewAssetLinks(s3url.NewPresigner(d.AWS.Credentials, d.AWS.Region, awsclient.Endpoint(d.AWS, "S3")), d.Buckets.Assets),
		Cancel:   sqswire.Lifecycle(d, st, sqswire.JobQueue(d, sq)),
		Webhooks: queue.NewDeliveries(sq, d.Webhooks.Queue, d.Webhooks.DLQ),
	})
	if err != nil {
		return nil, err
	}
	return httpapi.Middleware(d.Log, c.Routes()), nil
}

// conversion is the price file's compute_units_per_usd (console.Prices).
type conversion int64

func (c conversion) UnitsPerUSD() (int64, error) { return int64(c), nil }
