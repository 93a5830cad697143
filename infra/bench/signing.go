package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"genjobs/internal/emulator"
	"genjobs/internal/signing"
	"genjobs/internal/signing/kmssigner"
)

// Bounds of the signing run: whichever comes first.
const (
	signClients  = 8
	signRequests = 5000
	signDuration = 10 * time.Second
)

// measureSigning makes webhook tokens through the KMS path: the SDK's KMS
// client against moto's KMS (an ECC_NIST_P256 key, as the template's), the
// DER signature turned into r||s, the JWT built and checked. In AWS each
// token is one KMS Sign over the network; here it shows what our side of it
// costs, with moto's (Python) side on top.
func measureSigning(ctx context.Context, root string) loadStats {
	failed := func(err error) loadStats { return loadStats{errs: []string{err.Error()}, elapsed: time.Nanosecond} }
	py, err := emulator.MotoPython(ctx)
	if err != nil {
		return failed(err)
	}
	mo, err := emulator.StartMoto(ctx, emulator.MotoOptions{Python: py, LogFile: filepath.Join(emulator.LogDir(root), "bench-moto.log")})
	if err != nil {
		return failed(err)
	}
	defer mo.Stop()
	client := emulator.KMSClient(mo.Endpoint())
	created, err := client.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify})
	if err != nil {
		return failed(err)
	}
	key := kmssigner.New(client, *created.KeyMetadata.KeyId)
	body := []byte(`{"job_id":"0194b3a0-5c6e-7d2f-9a01-23456789abcd","status":"completed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:33:04.511Z","result":{"urls":["https://example.com/r.png"]},"progress":1}`)
	call := func(ctx context.Context) error {
		_, err := signing.WebhookToken(ctx, key, signing.WebhookClaims{
			Issuer: "https://api.example.com", Audience: "https://hooks.example.com/in", Subject: "0194b3a0-5c6e-7d2f-9a01-23456789abcd",
			ID: "whk_bench", IssuedAt: time.Now(), Body: body,
		})
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: webhook signing through the KMS client and moto (%d clients)...\n", signClients)
	drive(ctx, signClients, 200, signDuration, call) // warm-up: the public key fetch, the pools
	return drive(ctx, signClients, signRequests, signDuration, call)
}
