package member

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"
)

// A session re-checks its person against Cognito (disabled, deleted,
// signed out everywhere) when its last check is RecheckEvery old. When
// Cognito cannot be reached, the session keeps working until its last
// check is RecheckGrace old, then stops until Cognito answers again: a
// short outage does not sign everyone out, a long one does not let a
// disabled person work on.
const (
	RecheckEvery = 5 * time.Minute
	RecheckGrace = 30 * time.Minute
)

// NeedsRecheck says whether a request at now must check the person first.
func (s Session) NeedsRecheck(now time.Time) bool { return now.Sub(s.CheckedAt) >= RecheckEvery }

// RecheckOverdue says whether a session whose check failed at now must
// stop serving until a check succeeds.
func (s Session) RecheckOverdue(now time.Time) bool { return now.Sub(s.CheckedAt) >= RecheckGrace }

// ErrSealed: a sealed refresh token that does not open with the cookie.
var ErrSealed = errors.New("member: the sealed token does not open")

// sealKey derives the sealing key from the cookie's value: the server
// stores only the value's SHA-256 (HashSecret), so the key is never at
// rest anywhere.
func sealKey(cookie string) cipher.AEAD {
	m := hmac.New(sha256.New, []byte(cookie))
	m.Write([]byte("genjobs console: refresh token"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic("member: " + err.Error()) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("member: " + err.Error())
	}
	return aead
}

// SealRefresh seals a refresh token for the session whose cookie value is
// cookie (AES-256-GCM, bound to the session's hash).
func SealRefresh(cookie, token string) string {
	if token == "" {
		return ""
	}
	aead := sealKey(cookie)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("member: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(token), []byte(HashSecret(cookie))))
}

// OpenRefresh opens what SealRefresh sealed with the same cookie.
func OpenRefresh(cookie, sealed string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(sealed)
	aead := sealKey(cookie)
	if err != nil || len(b) < aead.NonceSize() {
		return "", ErrSealed
	}
	out, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte(HashSecret(cookie)))
	if err != nil {
		return "", ErrSealed
	}
	return string(out), nil
}
