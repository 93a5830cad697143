package signing

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LocalKey signs with a P-256 private key held in memory, read from a PEM
// file: the signer of `make run`, and of tests that need no KMS.
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

// LoadLocalKey reads a P-256 private key from a PEM file: a "PRIVATE KEY"
// (PKCS #8, what LoadOrCreateLocalKey writes) or an "EC PRIVATE KEY" (SEC 1,
// what `openssl ecparam -genkey` writes) block.
func LoadLocalKey(path string) (*LocalKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing: read key file: %w", err)
	}
	priv, err := parsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("signing: key file %s: %w", path, err)
	}
	return NewLocalKey(priv)
}

// LoadOrCreateLocalKey reads the key file at path, first creating it (mode
// 0600, its directory 0700 if missing) with a new P-256 key if there is none.
// Processes that start together agree on one key: the file appears whole or
// not at all, and the first one written wins.
func LoadOrCreateLocalKey(path string) (*LocalKey, error) {
	k, err := LoadLocalKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := createKeyFile(path); err != nil {
		return nil, err
	}
	return LoadLocalKey(path)
}

// createKeyFile writes a new key to a temporary file beside path and links
// it into place; a link, unlike a rename, never replaces a file another
// process has put there first.
func createKeyFile(path string) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("signing: generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return fmt.Errorf("signing: encode key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("signing: key directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".signing-key-*")
	if err != nil {
		return fmt.Errorf("signing: create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600 already; say so rather than rely on it.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("signing: create key file: %w", err)
	}
	if err := pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return fmt.Errorf("signing: write key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("signing: write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("signing: write key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("signing: create key file: %w", err)
	}
	return nil
}

func parsePrivateKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, err
	}
	priv, ok := key.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, errors.New("not a P-256 private key")
	}
	return priv, nil
}

// PublicKey returns the key's public half and kid.
func (k *LocalKey) PublicKey(context.Context) (PublicKey, error) { return k.pub, nil }

// Sign signs digest and returns the 64-byte r||s. It goes through the same
// DER conversion as KMS signatures.
func (k *LocalKey) Sign(_ context.Context, digest [32]byte) ([]byte, error) {
	der, err := ecdsa.SignASN1(rand.Reader, k.priv, digest[:])
	if err != nil {
		return nil, fmt.Errorf("signing: sign: %w", err)
	}
	return rawSignature(der)
}
