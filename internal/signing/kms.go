package signing

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// ErrKeyNotFound is returned when KMS has no key by the configured id.
var ErrKeyNotFound = errors.New("signing: KMS key not found")

// KMS signs with an AWS KMS key of spec ECC_NIST_P256 and usage
// SIGN_VERIFY (ECDSA_SHA_256 over a DIGEST). It needs kms:GetPublicKey and
// kms:Sign on the key.
//
// The public key is fetched with GetPublicKey on first use, not at
// construction, and kept for the life of the process (one Lambda execution
// environment): concurrent first callers share one request, and a failed
// fetch is tried again by the next caller. Signing names the key by the ARN
// that GetPublicKey answered, so when the configured id is an alias that is
// moved to another key, this process goes on signing with the key whose kid
// it publishes until it restarts.
type KMS struct {
	client *kms.Client
	keyID  string

	mu  sync.Mutex // held while fetching the key
	key atomic.Pointer[kmsKey]
}

// kmsKey is what GetPublicKey told about the key.
type kmsKey struct {
	arn string
	pub PublicKey
}

// NewKMS returns a Signer on the KMS key keyID (a key id, key ARN, alias
// name or alias ARN). It does no I/O.
func NewKMS(client *kms.Client, keyID string) *KMS {
	return &KMS{client: client, keyID: keyID}
}

// PublicKey returns the key's public half and kid, fetched once.
func (k *KMS) PublicKey(ctx context.Context) (PublicKey, error) {
	key, err := k.load(ctx)
	if err != nil {
		return PublicKey{}, err
	}
	return key.pub, nil
}

// Sign signs digest with the key (MessageType DIGEST: KMS does not hash
// again) and returns the 64-byte r||s.
func (k *KMS) Sign(ctx context.Context, digest [32]byte) ([]byte, error) {
	key, err := k.load(ctx)
	if err != nil {
		return nil, err
	}
	out, err := k.client.Sign(ctx, &kms.SignInput{
		KeyId:            aws.String(key.arn),
		Message:          digest[:],
		MessageType:      types.MessageTypeDigest,
		SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256,
	})
	if err != nil {
		return nil, k.wrap("sign with", err)
	}
	sig, err := rawSignature(out.Signature)
	if err != nil {
		return nil, fmt.Errorf("signing: KMS key %s: %w", key.arn, err)
	}
	return sig, nil
}

// load returns the cached key, fetching it if this is the first use.
func (k *KMS) load(ctx context.Context) (*kmsKey, error) {
	if key := k.key.Load(); key != nil {
		return key, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if key := k.key.Load(); key != nil {
		return key, nil
	}
	key, err := k.fetch(ctx)
	if err != nil {
		return nil, err
	}
	k.key.Store(key)
	return key, nil
}

func (k *KMS) fetch(ctx context.Context) (*kmsKey, error) {
	out, err := k.client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(k.keyID)})
	if err != nil {
		return nil, k.wrap("get the public key of", err)
	}
	if out.KeySpec != types.KeySpecEccNistP256 || out.KeyUsage != types.KeyUsageTypeSignVerify {
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
	pub, err := NewPublicKey(ec)
	if err != nil {
		return nil, err
	}
	arn := aws.ToString(out.KeyId)
	if arn == "" {
		arn = k.keyID
	}
	return &kmsKey{arn: arn, pub: pub}, nil
}

// wrap names the key in a KMS error and marks a missing key ErrKeyNotFound.
func (k *KMS) wrap(what string, err error) error {
	var nf *types.NotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %s: %w", ErrKeyNotFound, k.keyID, err)
	}
	return fmt.Errorf("signing: %s KMS key %s: %w", what, k.keyID, err)
}
