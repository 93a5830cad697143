package signing_test

import (
	"context"
	"testing"
	"time"

	"genjobs/internal/signing"
	"genjobs/internal/signing/kmssigner"
)

// BenchmarkKMSSign measures signing throughput through the SDK and moto's
// KMS, both on this machine: the client's SigV4 signing, JSON, HTTP on
// loopback, moto's Python and ECDSA, and the DER conversion. It bounds what one process can sign locally, not what AWS KMS
// allows (its ECC signing request quota does that in production).
func BenchmarkKMSSign(b *testing.B) {
	client, _ := motoKMS(b)
	signer := kmssigner.New(client, newKey(b))
	ctx := context.Background()
	msg := []byte("benchmark")
	if _, err := signer.PublicKey(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := signer.Sign(ctx, msg); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "signatures/s")
}

// BenchmarkWebhookToken is one whole token through the KMS path: claims,
// JSON, the KMS signature and the self-check against the public key.
func BenchmarkWebhookToken(b *testing.B) {
	client, _ := motoKMS(b)
	signer := kmssigner.New(client, newKey(b))
	ctx := context.Background()
	c := signing.WebhookClaims{Issuer: "https://api.example.com", Audience: "https://hooks.example.com/in",
		Subject: "job_1", ID: "wh_1", IssuedAt: time.Now(), Body: make([]byte, 2048)}
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := signing.WebhookToken(ctx, signer, c); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tokens/s")
}
