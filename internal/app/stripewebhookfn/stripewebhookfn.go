// Package stripewebhookfn wires the Stripe webhook function (docs/console.md):
// the table and the Stripe keys in Secrets Manager. It has none of the
// console's Cognito grants, and calls none of Stripe's API: it only
// verifies the events Stripe sends.
package stripewebhookfn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/checkout"
	"genjobs/internal/httpapi"
	"genjobs/internal/secrets"
	"genjobs/internal/store/topupsdb"
	"genjobs/internal/stripehook"
)

// Build builds POST /webhooks/stripe. It does no I/O: the keys are read at
// the first event.
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"TABLE_NAME": d.Table, "STRIPE_SECRET_ID": d.Console.StripeSecretID}); err != nil {
		return nil, err
	}
	keys := secrets.StripeFrom(d.AWS, d.Retries.SecretsManager, d.Console.StripeSecretID)
	h := &stripehook.Handler{Store: topupsdb.New(dynamodbwire.Store(d)), Events: checkout.New(keys, ""), Clock: d.Clock, Metrics: d.Metrics}
	return httpapi.Middleware(d.Log, h.Routes()), nil
}
