package signing_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"genjobs/internal/signing"
)

func TestJWKSDocument(t *testing.T) {
	cur, prev := pubOf(t, mustLocal(t)), pubOf(t, mustLocal(t))
	doc, err := signing.JWKS(cur, prev, cur)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(doc), `{"keys":[{"kty":"EC","crv":"P-256","x":"`) {
		t.Fatalf("document %s", doc)
	}
	var got struct{ Keys []map[string]string }
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Keys) != 2 {
		t.Fatalf("%d keys, want the current and the previous once each: %s", len(got.Keys), doc)
	}
	for i, k := range []signing.PublicKey{cur, prev} {
		b, _ := k.Key.Bytes()
		want := map[string]string{
			"kty": "EC", "crv": "P-256",
			"x":   base64.RawURLEncoding.EncodeToString(b[1:33]),
			"y":   base64.RawURLEncoding.EncodeToString(b[33:]),
			"use": "sig", "alg": "ES256", "kid": k.ID,
		}
		if !reflect.DeepEqual(got.Keys[i], want) {
			t.Fatalf("key %d: %v, want %v", i, got.Keys[i], want)
		}
	}

	ks, err := signing.ParseJWKS(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []signing.PublicKey{cur, prev} {
		if pk, ok := ks.Lookup(k.ID); !ok || !pk.Equal(k.Key) {
			t.Fatalf("ParseJWKS lost key %s", k.ID)
		}
	}
}

func TestJWKSRefuses(t *testing.T) {
	if _, err := signing.JWKS(); err == nil {
		t.Fatal("an empty JWKS")
	}
	k := pubOf(t, mustLocal(t))
	k.ID = "my-key"
	if _, err := signing.JWKS(k); err == nil {
		t.Fatal("a kid that is not the thumbprint")
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := signing.NewPublicKey(&p384.PublicKey); err == nil {
		t.Fatal("a P-384 key")
	}
}

func TestParseJWKS(t *testing.T) {
	good := pubOf(t, mustLocal(t))
	doc, _ := signing.JWKS(good)
	var set struct{ Keys []map[string]string }
	_ = json.Unmarshal(doc, &set)
	gk := set.Keys[0]
	with := func(edit func(map[string]string)) map[string]string {
		m := map[string]string{}
		for k, v := range gk {
			m[k] = v
		}
		edit(m)
		return m
	}
	encode := func(keys ...map[string]string) []byte {
		b, _ := json.Marshal(map[string]any{"keys": keys})
		return b
	}
	// Keys not for ES256 signatures are skipped, as RFC 7517 asks.
	ks, err := signing.ParseJWKS(encode(
		map[string]string{"kty": "RSA", "kid": "rsa", "n": "AQAB", "e": "AQAB"},
		with(func(m map[string]string) { m["kid"] = "enc"; m["use"] = "enc" }),
		with(func(m map[string]string) { m["kid"] = "es384"; m["alg"] = "ES384" }),
		with(func(m map[string]string) { delete(m, "kid") }),
		gk,
	))
	if err != nil {
		t.Fatal(err)
	}
	for _, kid := range []string{"rsa", "enc", "es384", ""} {
		if _, ok := ks.Lookup(kid); ok {
			t.Fatalf("key %q should have been skipped", kid)
		}
	}
	if _, ok := ks.Lookup(good.ID); !ok {
		t.Fatal("the ES256 key was skipped")
	}

	offCurve := with(func(m map[string]string) { m["y"] = m["x"] })
	for name, d := range map[string][]byte{
		"off the curve": encode(offCurve),
		"short x":       encode(with(func(m map[string]string) { m["x"] = m["x"][:40] })),
		"no usable key": encode(map[string]string{"kty": "RSA", "kid": "rsa"}),
		"not JSON":      []byte("{"),
	} {
		if _, err := signing.ParseJWKS(d); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
