package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"genjobs/internal/signing"
	"genjobs/internal/signing/kmstest"
)

// Bounds of the signing run: whichever comes first.
const (
	signClients  = 8
	signRequests = 5000
	signDuration = 10 * time.Second
)

// measureSigning makes webhook tokens through the KMS path: the SDK's KMS
// client against a protocol-level KMS server backed by a real P-256 key (no
// KMS emulator exists here), the DER signature turned into r||s, the JWT
// built and checked. In AWS each token is one KMS Sign over the network;
// here it shows what our side of it costs.
func measureSigning(ctx context.Context) loadStats {
	srv := kmstest.Start()
	defer srv.Close()
	key := signing.NewKMS(srv.Client(), srv.KeyID)
	body := []byte(`{"job_id":"0194b3a0-5c6e-7d2f-9a01-23456789abcd","status":"completed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:33:04.511Z","result":{"urls":["https://example.com/r.png"]},"progress":1}`)
	call := func(ctx context.Context) error {
		_, err := signing.WebhookToken(ctx, key, signing.WebhookClaims{
			Issuer: "https://api.example.com", Audience: "https://hooks.example.com/in", Subject: "0194b3a0-5c6e-7d2f-9a01-23456789abcd",
			ID: "whk_bench", IssuedAt: time.Now(), Body: body,
		})
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: webhook signing through the KMS client (%d clients)...\n", signClients)
	drive(ctx, signClients, 200, signDuration, call) // warm-up: the public key fetch, the JIT of nothing, the pools
	return drive(ctx, signClients, signRequests, signDuration, call)
}
