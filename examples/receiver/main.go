// Command receiver is a webhook receiver that verifies every delivery the
// way docs/api.md ("Verifying a delivery") describes, with the client
// package's WebhookVerifier, and prints the jobs it gets:
//
//	go run ./examples/receiver --url http://127.0.0.1:9000/hooks \
//	    --jwks http://127.0.0.1:3000/.well-known/jwks.json --issuer http://127.0.0.1:3000
//
// then create a job with -H 'X-Webhook-URL: http://127.0.0.1:9000/hooks'.
// The URL given here must be byte for byte the X-Webhook-URL: it is the
// signature's aud. (genjobs webhook listen does the same.)
//
// A delivery the receiver missed (it was not running, or failed) is retried
// after 5 s, then 5 minutes; to have it sent now:
//
//	go run ./infra/admin webhook redeliver --job <job_id>
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"

	"genjobs/client"
	"genjobs/infra/local/endpoints"
)

func main() {
	self := flag.String("url", "http://127.0.0.1:9000/hooks", "this receiver's webhook `URL`, exactly as given in X-Webhook-URL")
	jwks := flag.String("jwks", endpoints.DefaultAPI()+"/.well-known/jwks.json", "the service's JWKS `URL` (default: the running make run's)")
	issuer := flag.String("issuer", "", "the service's base `URL` (the tokens' iss); empty accepts any")
	flag.Parse()
	u, err := url.Parse(*self)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "receiver: --url must be an absolute URL")
		os.Exit(2)
	}
	mux := http.NewServeMux()
	v := client.NewWebhookVerifier(*issuer, *self)
	v.JWKSURL = *jwks
	mux.Handle(u.EscapedPath(), handler(v))
	fmt.Fprintf(os.Stderr, "receiver: listening on %s for %s\n", u.Host, *self)
	if err := http.ListenAndServe(u.Host, mux); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

// handler prints each verified delivery once: its webhook id and body.
func handler(v *client.WebhookVerifier) http.Handler {
	return v.Handler(func(_ context.Context, ev *client.WebhookEvent) error {
		fmt.Printf("%s %s\n", ev.ID, ev.Body)
		return nil
	})
}
