package signing

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// jwk is one key of the JWKS document, members in the order it is written.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	Kid string `json:"kid,omitempty"`
}

type jwkSet struct {
	Keys []jwk `json:"keys"`
}

// JWKS writes the document served at GET /.well-known/jwks.json:
//
//	{"keys":[{"kty":"EC","crv":"P-256","x":...,"y":...,"use":"sig","alg":"ES256","kid":...}]}
//
// with the keys in the order given (the current key, then during a rotation
// the previous one). A key given twice is listed once.
func JWKS(keys ...PublicKey) ([]byte, error) {
	if len(keys) == 0 {
		return nil, errors.New("signing: a JWKS needs at least one key")
	}
	set := jwkSet{Keys: []jwk{}}
	seen := map[string]bool{}
	for _, k := range keys {
		x, y, err := coordinates(k.Key)
		if err != nil {
			return nil, err
		}
		if kid := thumbprint(x, y); k.ID != kid {
			return nil, fmt.Errorf("signing: key id %q is not the key's thumbprint %q", k.ID, kid)
		}
		if seen[k.ID] {
			continue
		}
		seen[k.ID] = true
		set.Keys = append(set.Keys, jwk{
			Kty: "EC", Crv: "P-256",
			X:   base64.RawURLEncoding.EncodeToString(x),
			Y:   base64.RawURLEncoding.EncodeToString(y),
			Use: "sig", Alg: Algorithm, Kid: k.ID,
		})
	}
	return json.Marshal(set)
}

// KeySet is a receiver's set of verification keys by kid.
type KeySet struct {
	keys map[string]*ecdsa.PublicKey
}

// NewKeySet is the set of the given keys.
func NewKeySet(keys ...PublicKey) *KeySet {
	ks := &KeySet{keys: map[string]*ecdsa.PublicKey{}}
	for _, k := range keys {
		ks.keys[k.ID] = k.Key
	}
	return ks
}

// ParseJWKS reads a JWKS document. Keys that are not for ES256 signatures
// (another kty, crv, alg or use) and keys without a kid are skipped, as RFC
// 7517 asks of keys a reader does not use; a P-256 key whose point is not on
// the curve is an error, and so is a document with no usable key.
func ParseJWKS(doc []byte) (*KeySet, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("signing: JWKS: %w", err)
	}
	ks := &KeySet{keys: map[string]*ecdsa.PublicKey{}}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" || k.Kid == "" ||
			(k.Alg != "" && k.Alg != Algorithm) || (k.Use != "" && k.Use != "sig") {
			continue
		}
		x, errX := base64.RawURLEncoding.Strict().DecodeString(k.X)
		y, errY := base64.RawURLEncoding.Strict().DecodeString(k.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return nil, fmt.Errorf("signing: JWKS key %q: x and y must be 32 bytes each, base64url", k.Kid)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("signing: JWKS key %q: %w", k.Kid, err)
		}
		ks.keys[k.Kid] = pub
	}
	if len(ks.keys) == 0 {
		return nil, errors.New("signing: JWKS has no ES256 key")
	}
	return ks, nil
}

// Lookup returns the key with kid.
func (ks *KeySet) Lookup(kid string) (*ecdsa.PublicKey, bool) {
	k, ok := ks.keys[kid]
	return k, ok
}
