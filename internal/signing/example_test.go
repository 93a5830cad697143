package signing_test

import (
	"context"
	"fmt"
	"time"

	"genjobs/internal/signing"
)

// A delivery from sender to receiver: the sender signs the body it posts
// and publishes its keys; the receiver verifies with the JWKS and dedupes on
// the returned ID.
func Example() {
	ctx := context.Background()
	signer, err := signing.GenerateLocalKey() // kmssigner.New(kmsClient, keyID) in AWS
	if err != nil {
		panic(err)
	}
	body := []byte(`{"id":"job_123","status":"completed"}`)
	sent := time.Unix(1_800_000_000, 0)
	token, err := signing.WebhookToken(ctx, signer, signing.WebhookClaims{
		Issuer:   "https://api.example.com",
		Audience: "https://hooks.example.com/genjobs",
		Subject:  "job_123",
		ID:       "wh_456",
		IssuedAt: sent,
		Body:     body,
	})
	if err != nil {
		panic(err)
	}
	pub, _ := signer.PublicKey(ctx)
	jwks, _ := signing.JWKS(pub) // GET /.well-known/jwks.json

	// The receiver.
	keys, err := signing.ParseJWKS(jwks)
	if err != nil {
		panic(err)
	}
	got, err := signing.Verify(token, body, keys, signing.Expect{
		Audience: "https://hooks.example.com/genjobs",
		Issuer:   "https://api.example.com",
		Now:      sent.Add(2 * time.Second),
		Leeway:   5 * time.Second,
	})
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println(got.Subject, got.ID)

	_, err = signing.Verify(token, []byte(`{"id":"job_123","status":"failed"}`), keys, signing.Expect{
		Audience: "https://hooks.example.com/genjobs",
		Now:      sent,
	})
	fmt.Println(err)
	// Output:
	// job_123 wh_456
	// signing: body does not match body_sha256
}
