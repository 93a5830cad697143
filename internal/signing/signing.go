// Package signing signs webhooks: the ES256 JWT of docs/api.md ("Webhooks"), the
// signers behind it and the JWKS document that publishes their keys.
//
// A [Signer] holds one P-256 key. Two implement it: kmssigner.Signer, the AWS KMS
// adapter (the only code that speaks to KMS; `make run` and the tests run it
// against moto's KMS), and [LocalKey], a key in memory for receivers' tests
// and examples. [WebhookToken] builds one delivery attempt's token with
// golang-jwt through a signing method of this package's own, never registered
// globally; [JWKS] writes the document served at GET /.well-known/jwks.json;
// [Verify] is what a receiver does with a delivery.
//
// Key ids: a key's `kid` is its RFC 7638 JWK thumbprint (SHA-256, base64url).
// It is computed from the public key alone, so it is the same whichever KMS
// alias, key id or ARN names the key, it reveals no account or key ARN, a
// receiver can recompute it, and an in-memory key gets one by the same rule.
package signing

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
)

// Algorithm is the JWS algorithm of every signature here: ECDSA on P-256
// with SHA-256, signatures as the 64-byte r||s of RFC 7518 section 3.4.
const Algorithm = "ES256"

// SignatureSize is the length of an ES256 signature: r and s, 32 bytes each.
const SignatureSize = 64

// MaxMessageSize is the longest message a Signer signs: KMS's limit for a
// RAW message, which it hashes itself. A webhook token's signing input is
// well under 1 KB (the body travels as its hash).
const MaxMessageSize = 4096

// Signer signs messages with one P-256 key: ECDSA over the message's SHA-256.
type Signer interface {
	// PublicKey returns the key that verifies Sign's signatures, with its kid.
	PublicKey(ctx context.Context) (PublicKey, error)
	// Sign signs message (at most MaxMessageSize bytes). The signature is the
	// 64-byte r||s of JWS, r and s each left-padded to 32 bytes.
	Sign(ctx context.Context, message []byte) ([]byte, error)
}

// PublicKey is a verification key and its kid.
type PublicKey struct {
	// ID is the JWS kid: the key's RFC 7638 thumbprint.
	ID string
	// Key is a P-256 public key.
	Key *ecdsa.PublicKey
}

// NewPublicKey names a P-256 public key by its thumbprint.
func NewPublicKey(key *ecdsa.PublicKey) (PublicKey, error) {
	x, y, err := coordinates(key)
	if err != nil {
		return PublicKey{}, err
	}
	return PublicKey{ID: thumbprint(x, y), Key: key}, nil
}

// coordinates returns a P-256 key's x and y as 32 bytes each.
func coordinates(key *ecdsa.PublicKey) (x, y []byte, err error) {
	if key == nil || key.Curve != elliptic.P256() {
		return nil, nil, errors.New("signing: not a P-256 public key")
	}
	b, err := key.Bytes() // 0x04 || x || y
	if err != nil {
		return nil, nil, fmt.Errorf("signing: encode public key: %w", err)
	}
	return b[1:33], b[33:65], nil
}

// thumbprint is the RFC 7638 JWK thumbprint of an EC key: SHA-256 over the
// required members in lexicographic order, with no whitespace.
func thumbprint(x, y []byte) string {
	b64 := base64.RawURLEncoding.EncodeToString
	canon := `{"crv":"P-256","kty":"EC","x":"` + b64(x) + `","y":"` + b64(y) + `"}`
	sum := sha256.Sum256([]byte(canon))
	return b64(sum[:])
}

// RawSignature converts an ASN.1 DER ECDSA signature (what KMS and
// ecdsa.SignASN1 return) to the 64-byte r||s of JWS. DER writes r and s as
// minimal big-endian integers: 33 bytes when the top bit is set (a leading
// zero keeps them positive), and 31 or fewer for about one value in 256. Each
// is therefore left-padded to exactly 32 bytes; dropping the padding would
// make about one signature in 128 fail to verify.
func RawSignature(der []byte) ([]byte, error) {
	var sig struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(der, &sig)
	if err != nil {
		return nil, fmt.Errorf("signing: decode DER signature: %w", err)
	}
	if len(rest) != 0 {
		return nil, errors.New("signing: trailing bytes after the DER signature")
	}
	out := make([]byte, SignatureSize)
	for i, n := range []*big.Int{sig.R, sig.S} {
		if n.Sign() <= 0 || n.BitLen() > 256 {
			return nil, errors.New("signing: DER signature is not a P-256 signature")
		}
		n.FillBytes(out[i*32 : (i+1)*32])
	}
	return out, nil
}

// verifyRaw checks a 64-byte r||s signature of digest.
func verifyRaw(key *ecdsa.PublicKey, digest []byte, sig []byte) bool {
	if len(sig) != SignatureSize {
		return false
	}
	r := new(big.Int).SetBytes(sig[:32])
	s := new(big.Int).SetBytes(sig[32:])
	return ecdsa.Verify(key, digest, r, s)
}
