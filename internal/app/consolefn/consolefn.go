// Package consolefn wires the console function (docs/console.md): the
// table, the Cognito user pool, the Stripe keys in Secrets Manager,
// Stripe's API, the price list (the models' prices and the packs of
// compute units), the results and assets buckets' presigned URLs for the
// jobs pages, the queues a job page's "Cancel" (the backlog's promotion)
// and "Deliver again" send to, and the playground's runs: the generate
// function's creation handler and the assets function's upload handler,
// called in process (so the console links the catalog, the schema
// validator and the price list, as the generate function does). It is the
// only function that links the Cognito client.
package consolefn

import (
	"net/http"

	"genjobs/internal/app"
	"genjobs/internal/app/generatefn"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/authserver"
	"genjobs/internal/awsclient"
	"genjobs/internal/blob/s3url"
	"genjobs/internal/checkout"
	"genjobs/internal/cognito"
	"genjobs/internal/console"
	"genjobs/internal/httpapi"
	"genjobs/internal/queue"
	"genjobs/internal/secrets"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/oauthdb"
	"genjobs/internal/store/sessionsdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/store/throttledb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/store/topupsdb"
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
	// The playground's runs: the API's own handlers, on the console's
	// table client and queue sender. The catalog and the price list are
	// read now (the models and billing pages use them; a bad PRICES_JSON
	// stops the function here); the generate handler, which reads
	// PROVIDER_ROUTES and checks each route against its endpoint's schema,
	// is built by the first run of a playground: most of the console's
	// starts serve none.
	jobsAPI, err := sqswire.NewJobsAPI(d)
	if err != nil {
		return nil, err
	}
	cat, prices, err := generatefn.Catalog(d)
	if err != nil {
		return nil, err
	}
	gen := app.OnFirstUse("build the generate handler", func() (http.Handler, error) {
		g, err := generatefn.HandlerOn(d, jobsAPI, cat, prices)
		if err != nil {
			return nil, err
		}
		return g.Routes(), nil
	})
	uploads := &httpapi.Assets{Auth: jobsAPI.Auth, Assets: assetsdb.New(jobsAPI.Store), Blobs: d.AssetPuts(), Clock: d.Clock, BaseURL: d.API.BaseURL}
	api := http.NewServeMux()
	api.Handle("POST /generate/", gen)
	api.Handle("POST /assets", uploads.Upload())
	api.Handle("/", httpapi.NotFound())
	keys := secrets.StripeFrom(d.AWS, d.Retries.SecretsManager, d.Console.StripeSecretID)
	results := d.ResultLinks()
	st := jobsAPI.Store
	c, err := console.New(console.Config{
		Jobs: deliveriesdb.New(st), Sessions: sessionsdb.New(st), Members: membersdb.New(st), Accounts: accountsdb.New(st),
		Tokens: tokensdb.New(st), TopUps: topupsdb.New(st), Ledger: ledgerdb.New(st), Throttle: throttledb.New(st), Styles: stylesdb.New(st),
		Identity: id, Payments: checkout.New(keys, d.Console.StripeAPIBase), Prices: prices,
		Clock: d.Clock, Log: d.Log, AppURL: d.API.AppURL, Results: results, ResultsOrigin: results.Origin(),
		Assets:   s3url.NewAssetLinks(s3url.NewPresigner(d.AWS.Credentials, d.AWS.Region, awsclient.Endpoint(d.AWS, "S3")), d.Buckets.Assets),
		Cancel:   sqswire.Lifecycle(d, st, jobsAPI.Queue),
		Webhooks: queue.NewDeliveries(sqswire.Client(d), d.Webhooks.Queue, d.Webhooks.DLQ),
		API:      api, Catalog: cat, APIURL: d.API.BaseURL,
		// The consent page checks authorization requests (client ID
		// metadata documents fetched through the network guard) and
		// issues codes; the oauth function redeems them.
		OAuth: &authserver.Server{BaseURL: d.API.BaseURL, AppURL: d.API.AppURL, Store: oauthdb.New(st),
			Documents: authserver.NewDocuments(d.Network.Guard(), d.Clock), Clock: d.Clock},
	})
	if err != nil {
		return nil, err
	}
	return httpapi.Middleware(d.Log, c.Routes()), nil
}
