package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"genjobs/internal/store"
)

// OnceLife is how long a value shown once (a new token's value, a temporary
// password) waits for its display after the form that made it.
const OnceLife = 60 * time.Second

// The holder of values shown once. A form that makes a secret does not
// render it in its own answer, which a reload would post again (and make
// another secret): it holds the value for its one display and redirects
// (303) to a page that takes it and shows it. A reload of that page finds
// nothing and says the value was shown once.
//
// The value is held in the table under the session (Sessions.HoldOnce), never
// in a URL, for at most OnceLife, and taken (read and deleted in one call)
// by the first display. It is sealed with AES-GCM under a key derived from
// the session's cookie, which the table does not keep (it keeps the
// cookie's SHA-256): what the table holds is unreadable without the
// browser's cookie, and bound to its session and id.

// OnceStore keeps the sealed values (sessionsdb.DB).
type OnceStore interface {
	HoldOnce(ctx context.Context, session, id string, sealed []byte, expires time.Time) error
	TakeOnce(ctx context.Context, session, id string, now time.Time) ([]byte, error)
}

// validOnceID is an id a display may name in its URL: short, of letters,
// digits, '_', '-' and ':' (such as "token:tok_…").
func validOnceID(id string) bool {
	if id == "" || len(id) > 120 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == ':') {
			return false
		}
	}
	return true
}

// onceAEAD is the session's sealing cipher: its key is an HMAC of a fixed
// label keyed with the cookie's value.
func onceAEAD(cookie string) (cipher.AEAD, error) {
	mac := hmac.New(sha256.New, []byte(cookie))
	mac.Write([]byte("genjobs console: a value shown once"))
	block, err := aes.NewCipher(mac.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// holdOnce keeps value for the one display of req's session under id
// (validOnceID), for OnceLife from now.
func (c *Console) holdOnce(ctx context.Context, req *request, id, value string) error {
	if !validOnceID(id) {
		return fmt.Errorf("console: %q is not an id for a value shown once", id)
	}
	aead, err := onceAEAD(req.cookie)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := aead.Seal(nonce, nonce, []byte(value), []byte(req.session.Hash+"\x00"+id))
	return c.Sessions.HoldOnce(ctx, req.session.Hash, id, sealed, c.Clock.Now().Add(OnceLife))
}

// takeOnce returns, and removes, the value req's session holds under id.
// ok is false when there is none: never held, shown already, or held for
// longer than OnceLife.
func (c *Console) takeOnce(ctx context.Context, req *request, id string) (value string, ok bool, err error) {
	if !validOnceID(id) {
		return "", false, nil
	}
	sealed, err := c.Sessions.TakeOnce(ctx, req.session.Hash, id, c.Clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	aead, err := onceAEAD(req.cookie)
	if err != nil {
		return "", false, err
	}
	if len(sealed) < aead.NonceSize() {
		return "", false, nil
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(req.session.Hash+"\x00"+id))
	if err != nil {
		// Not sealed for this session and id: nothing to show.
		return "", false, nil
	}
	return string(plain), true, nil
}
