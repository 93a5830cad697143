// Package jwksfn wires the jwks function: GET /.well-known/jwks.json, the
// public halves of the webhook signing keys.
package jwksfn

import (
	"net/http"
	"time"

	"genjobs/internal/app"
	"genjobs/internal/app/kmswire"
	"genjobs/internal/httpapi"
	"genjobs/internal/signing"
)

// KeyMaxAge is how long the JWKS serves a key before reading it from
// KMS again: an alias moved to a new key (or, locally, the key made again
// after moto restarted) is published within it. Its clients cache the
// document for 5 minutes anyway.
const KeyMaxAge = time.Minute

// Build builds the handler of GET /.well-known/jwks.json: the current key,
// and the previous one during a rotation.
func Build(d app.Deps) (http.Handler, error) {
	if err := app.Require(map[string]string{"SIGNING_KEY_ID": d.Signing.KeyID}); err != nil {
		return nil, err
	}
	pub := &signing.Publisher{Clock: d.Clock, OnPreviousError: func(err error) {
		d.Log.Warn("the previous signing key cannot be read; the JWKS lists the current key only",
			"key_id", d.Signing.PreviousKeyID, "error", err.Error())
	}}
	current := kmswire.Signer(d, d.Signing.KeyID)
	current.MaxAge = KeyMaxAge
	pub.Current = current
	if d.Signing.PreviousKeyID != "" && d.Signing.PreviousKeyID != d.Signing.KeyID {
		previous := kmswire.Signer(d, d.Signing.PreviousKeyID)
		previous.MaxAge = KeyMaxAge
		pub.Previous = previous
	}
	return httpapi.Middleware(d.Log, httpapi.JWKS(pub.Document)), nil
}
