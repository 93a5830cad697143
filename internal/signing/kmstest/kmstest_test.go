package kmstest_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"genjobs/internal/signing/kmstest"
)

// The real SDK client gets what it would get from KMS.
func TestServerSpeaksKMS(t *testing.T) {
	srv := kmstest.NewServer(t)
	client := srv.Client()
	ctx := context.Background()
	srv.SetAlias("alias/webhooks", srv.KeyID)

	for _, ref := range []string{srv.KeyID, srv.KeyARN(), "alias/webhooks",
		"arn:aws:kms:" + kmstest.Region + ":" + kmstest.Account + ":alias/webhooks"} {
		out, err := client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(ref)})
		if err != nil {
			t.Fatalf("GetPublicKey %s: %v", ref, err)
		}
		if aws.ToString(out.KeyId) != srv.KeyARN() || out.KeySpec != types.KeySpecEccNistP256 ||
			out.KeyUsage != types.KeyUsageTypeSignVerify {
			t.Fatalf("GetPublicKey %s: %s %s %s", ref, aws.ToString(out.KeyId), out.KeySpec, out.KeyUsage)
		}
		pub, err := x509.ParsePKIXPublicKey(out.PublicKey)
		if err != nil || !srv.PublicKey(srv.KeyID).Equal(pub) {
			t.Fatalf("GetPublicKey %s: not the key (%v)", ref, err)
		}
	}

	digest := sha256.Sum256([]byte("message"))
	for _, in := range []*kms.SignInput{
		{KeyId: aws.String(srv.KeyID), Message: digest[:], MessageType: types.MessageTypeDigest, SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256},
		{KeyId: aws.String(srv.KeyID), Message: []byte("message"), MessageType: types.MessageTypeRaw, SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256},
	} {
		out, err := client.Sign(ctx, in)
		if err != nil {
			t.Fatalf("Sign %s: %v", in.MessageType, err)
		}
		if !ecdsa.VerifyASN1(srv.PublicKey(srv.KeyID), digest[:], out.Signature) {
			t.Fatalf("Sign %s: the DER signature does not verify", in.MessageType)
		}
	}
	if srv.Calls("Sign") != 2 || srv.Calls("GetPublicKey") != 4 {
		t.Fatalf("calls: Sign %d, GetPublicKey %d", srv.Calls("Sign"), srv.Calls("GetPublicKey"))
	}
}

func TestServerErrors(t *testing.T) {
	srv := kmstest.NewServer(t)
	client := srv.Client(func(o *kms.Options) { o.RetryMaxAttempts = 1 })
	ctx := context.Background()
	digest := sha256.Sum256([]byte("message"))
	code := func(err error) string {
		var api smithy.APIError
		if errors.As(err, &api) {
			return api.ErrorCode()
		}
		return "no API error: " + err.Error()
	}

	_, err := client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String("1234abcd-0000-0000-0000-000000000000")})
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("unknown key: %v, want *types.NotFoundException", err)
	}
	_, err = client.Sign(ctx, &kms.SignInput{KeyId: aws.String("alias/none"), Message: digest[:],
		MessageType: types.MessageTypeDigest, SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256})
	if !errors.As(err, &nf) {
		t.Fatalf("unknown alias: %v, want *types.NotFoundException", err)
	}
	_, err = client.Sign(ctx, &kms.SignInput{KeyId: aws.String(srv.KeyID), Message: digest[:31],
		MessageType: types.MessageTypeDigest, SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256})
	if code(err) != "ValidationException" {
		t.Fatalf("a 31-byte digest: %v", err)
	}
	_, err = client.Sign(ctx, &kms.SignInput{KeyId: aws.String(srv.KeyID), Message: digest[:],
		MessageType: types.MessageTypeDigest, SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha384})
	if code(err) != "InvalidKeyUsageException" {
		t.Fatalf("ECDSA_SHA_384 on a P-256 key: %v", err)
	}
	srv.ThrottleSigns(1)
	_, err = client.Sign(ctx, &kms.SignInput{KeyId: aws.String(srv.KeyID), Message: digest[:],
		MessageType: types.MessageTypeDigest, SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256})
	if code(err) != "ThrottlingException" {
		t.Fatalf("throttled: %v", err)
	}

	// A request that is not SigV4-signed is refused.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(`{"KeyId":"`+srv.KeyID+`"}`))
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "TrentService.GetPublicKey")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Amzn-ErrorType") != "MissingAuthenticationTokenException" {
		t.Fatalf("unsigned request: %d %s", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
	}
}

// Start serves programs that are not tests, such as `make bench`.
func TestStartClose(t *testing.T) {
	srv := kmstest.Start()
	if _, err := srv.Client().GetPublicKey(context.Background(), &kms.GetPublicKeyInput{KeyId: aws.String(srv.KeyID)}); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := srv.Client(func(o *kms.Options) { o.RetryMaxAttempts = 1 }).GetPublicKey(context.Background(),
		&kms.GetPublicKeyInput{KeyId: aws.String(srv.KeyID)}); err == nil {
		t.Fatal("a closed server answered")
	}
}
