package signing

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// LocalKey signs with a P-256 private key held in memory: the signer of
// receivers' tests and examples, which need no KMS. The service itself
// always signs through KMS (moto's, locally).
type LocalKey struct {
	priv *ecdsa.PrivateKey
	pub  PublicKey
}

// NewLocalKey returns a Signer on priv, which must be a P-256 key.
func NewLocalKey(priv *ecdsa.PrivateKey) (*LocalKey, error) {
	if priv == nil {
		return nil, errors.New("signing: no private key")
	}
	pub, err := NewPublicKey(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	return &LocalKey{priv: priv, pub: pub}, nil
}

// GenerateLocalKey returns a Signer on a new random P-256 key.
func GenerateLocalKey() (*LocalKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("signing: generate key: %w", err)
	}
	return NewLocalKey(priv)
}

// PublicKey returns the key's public half and kid.
func (k *LocalKey) PublicKey(context.Context) (PublicKey, error) { return k.pub, nil }

// Sign signs message's SHA-256 and returns the 64-byte r||s. It goes
// through the same DER conversion as KMS signatures.
func (k *LocalKey) Sign(_ context.Context, message []byte) ([]byte, error) {
	if len(message) > MaxMessageSize {
		return nil, fmt.Errorf("signing: a %d-byte message is over the %d bytes KMS signs", len(message), MaxMessageSize)
	}
	digest := sha256.Sum256(message)
	der, err := ecdsa.SignASN1(rand.Reader, k.priv, digest[:])
	if err != nil {
		return nil, fmt.Errorf("signing: sign: %w", err)
	}
	return RawSignature(der)
}
