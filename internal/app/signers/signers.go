// Package signers wires the webhook signing keys (KMS), and the function
// that uses them alone: the JWKS. It links the KMS client and no other AWS
// client; the deliverer (package webhookfn) signs with the same keys.
package signers

import (
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"genjobs/internal/app"
	"genjobs/internal/awsclient"
	"genjobs/internal/httpapi"
	"genjobs/internal/signing"
)

// Signer is the KMS key id (SIGNING_KEY_ID or SIGNING_PREVIOUS_KEY_ID)
// names, with a client built from d.AWS (locally, moto's KMS). It does no
// I/O: the key's public half is fetched on first use.
func Signer(d app.Deps, id string) *signing.KMS {
	p := d.Retries.KMS
	client := kms.NewFromConfig(d.AWS, func(o *kms.Options) {
		if u := awsclient.Endpoint(d.AWS, kms.ServiceID); u != "" {
			o.BaseEndpoint = &u
		}
		o.Retryer, o.RetryMaxAttempts = p.Retryer(), 0
		o.HTTPClient = p.HTTPClient(o.HTTPClient)
		o.APIOptions = p.APIOptions(o.APIOptions)
	})
	k := signing.NewKMS(client, id)
	k.Clock = d.Clock
	return k
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
	current := Signer(d, d.SigningKeyID)
	current.MaxAge = JWKSKeyMaxAge
	pub.Current = current
	if d.PreviousSigningKeyID != "" && d.PreviousSigningKeyID != d.SigningKeyID {
		previous := Signer(d, d.PreviousSigningKeyID)
		previous.MaxAge = JWKSKeyMaxAge
		pub.Previous = previous
	}
	build := pub.Document
	return httpapi.Middleware(d.Log, httpapi.JWKS(build)), nil
}
