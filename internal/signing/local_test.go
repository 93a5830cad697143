package signing_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"testing"

	"genjobs/internal/signing"
)

func TestLocalKeySignsTheMessagesSHA256(t *testing.T) {
	k := mustLocal(t)
	msg := []byte("header.claims")
	sig, err := k.Sign(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(msg)
	if !verifyRS(pubOf(t, k).Key, digest[:], sig) {
		t.Fatal("the signature does not verify as ECDSA-SHA256 of the message")
	}
	if _, err := k.Sign(context.Background(), bytes.Repeat([]byte{'a'}, signing.MaxMessageSize+1)); err == nil {
		t.Fatal("a message over KMS's 4,096 bytes was signed")
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.NewLocalKey(p384); err == nil {
		t.Fatal("a P-384 key was accepted")
	}
}
