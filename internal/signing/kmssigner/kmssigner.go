// Package kmssigner is the signing key in AWS KMS (signing.Signer): the
// webhook tokens' and the OAuth access tokens' keys. It is apart from
// package signing so that code that only verifies or names a signer does
// not link the KMS client.
package kmssigner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"genjobs/internal/clock"
	"genjobs/internal/signing"
)

// ErrKeyNotFound is returned when KMS has no key by the configured id.
var ErrKeyNotFound = errors.New("signing: KMS key not found")

// Signer signs with an AWS KMS key of spec ECC_NIST_P256 and usage
// SIGN_VERIFY: ECDSA_SHA_256 over the message itself (MessageType RAW: KMS
// hashes it). It needs kms:GetPublicKey and kms:Sign on the key. Locally the
// same code runs against moto's KMS, which mishandles MessageType DIGEST
// (it hashes the digest again) and leaves KeySpec out of GetPublicKey's
// answer: RAW is correct in both, and the curve is read from the key itself.
//
// The public key is fetched with GetPublicKey on first use, not at
// construction: concurrent first callers share one request, and a failed
// fetch is tried again by the next caller. Signing names the key by the ARN
// that GetPublicKey answered, so when the configured id is an alias that is
// moved to another key, Sign goes on with the key whose kid this process
// publishes until KMS says that key is gone, disabled or pending deletion:
// then the copy is dropped and the next call resolves the id again (locally,
// the key made again under the alias after moto restarted).
type Signer struct {
	client *kms.Client
	keyID  string

	// MaxAge, when set, is how long PublicKey trusts its copy of the key
	// before it asks KMS again, so that a JWKS publishes an alias's new key
	// within it; if that read fails, the copy is kept. Zero keeps the copy
	// for the life of the process (one Lambda execution environment).
	MaxAge time.Duration
	// Clock dates the copy; nil is the system clock.
	Clock clock.Clock

	mu  sync.Mutex // held while fetching the key
	key atomic.Pointer[kmsKey]
}

// kmsKey is what GetPublicKey told about the key.
type kmsKey struct {
	arn     string
	pub     signing.PublicKey
	fetched time.Time
}

// New returns a Signer on the KMS key keyID (a key id, key ARN, alias
// name or alias ARN). It does no I/O.
func New(client *kms.Client, keyID string) *Signer {
	return &Signer{client: client, keyID: keyID}
}

// PublicKey returns the key's public half and kid, fetched once (or once
// per MaxAge).
func (k *Signer) PublicKey(ctx context.Context) (signing.PublicKey, error) {
	if key := k.key.Load(); key != nil && k.MaxAge > 0 && k.now().Sub(key.fetched) >= k.MaxAge {
		if fresh, err := k.refresh(ctx, key); err == nil {
			return fresh.pub, nil
		}
		return key.pub, nil // the copy stays good until KMS answers
	}
	key, err := k.load(ctx)
	if err != nil {
		return signing.PublicKey{}, err
	}
	return key.pub, nil
}

// Sign signs message with the key (MessageType RAW: KMS hashes it with
// SHA-256) and returns the 64-byte r||s.
func (k *Signer) Sign(ctx context.Context, message []byte) ([]byte, error) {
	if len(message) > signing.MaxMessageSize {
		return nil, fmt.Errorf("signing: a %d-byte message is over the %d bytes KMS signs", len(message), signing.MaxMessageSize)
	}
	key, err := k.load(ctx)
	if err != nil {
		return nil, err
	}
	out, err := k.client.Sign(ctx, &kms.SignInput{
		KeyId:            aws.String(key.arn),
		Message:          message,
		MessageType:      types.MessageTypeRaw,
		SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256,
	})
	if err != nil {
		if gone(err) {
			k.key.CompareAndSwap(key, nil)
		}
		return nil, k.wrap("sign with", err)
	}
	sig, err := signing.RawSignature(out.Signature)
	if err != nil {
		return nil, fmt.Errorf("signing: KMS key %s: %w", key.arn, err)
	}
	return sig, nil
}

// gone reports a key that can no longer sign: deleted, disabled or pending
// deletion.
func gone(err error) bool {
	var nf *types.NotFoundException
	var disabled *types.DisabledException
	var state *types.KMSInvalidStateException
	return errors.As(err, &nf) || errors.As(err, &disabled) || errors.As(err, &state)
}

func (k *Signer) now() time.Time {
	if k.Clock == nil {
		return time.Now()
	}
	return k.Clock.Now()
}

// refresh fetches the key again unless another caller has since replaced
// stale.
func (k *Signer) refresh(ctx context.Context, stale *kmsKey) (*kmsKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if key := k.key.Load(); key != stale && key != nil {
		return key, nil
	}
	key, err := k.fetch(ctx)
	if err != nil {
		return nil, err
	}
	k.key.Store(key)
	return key, nil
}

// load returns the cached key, fetching it if this is the first use.
func (k *Signer) load(ctx context.Context) (*kmsKey, error) {
	if key := k.key.Load(); key != nil {
		return key, nil
	}
	return k.refresh(ctx, nil) // none kept yet: any key another caller fetched meanwhile will do
}

func (k *Signer) fetch(ctx context.Context) (*kmsKey, error) {
	out, err := k.client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(k.keyID)})
	if err != nil {
		return nil, k.wrap("get the public key of", err)
	}
	// moto answers no KeySpec: the key's own DER says its curve below.
	if (out.KeySpec != "" && out.KeySpec != types.KeySpecEccNistP256) ||
		(out.KeyUsage != "" && out.KeyUsage != types.KeyUsageTypeSignVerify) {
		return nil, fmt.Errorf("signing: KMS key %s is %s for %s; webhooks need an ECC_NIST_P256 key for SIGN_VERIFY",
			k.keyID, out.KeySpec, out.KeyUsage)
	}
	parsed, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("signing: KMS key %s: parse public key: %w", k.keyID, err)
	}
	ec, ok := parsed.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("signing: KMS key %s: public key is not P-256", k.keyID)
	}
	pub, err := signing.NewPublicKey(ec)
	if err != nil {
		return nil, err
	}
	arn := aws.ToString(out.KeyId)
	if arn == "" {
		arn = k.keyID
	}
	return &kmsKey{arn: arn, pub: pub, fetched: k.now()}, nil
}

// wrap names the key in a KMS error and marks a missing key ErrKeyNotFound.
func (k *Signer) wrap(what string, err error) error {
	var nf *types.NotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %s: %w", ErrKeyNotFound, k.keyID, err)
	}
	return fmt.Errorf("signing: %s KMS key %s: %w", what, k.keyID, err)
}
