package signing

import (
	"context"
	"sync"
	"time"

	"genjobs/internal/clock"
)

// Publisher makes the JWKS document of the current key and, during a
// rotation, the previous one. The current key must be read. A previous key
// that cannot be read (scheduled for deletion, disabled, its grant gone) is
// left out rather than failing the document, so that receivers go on
// verifying what the current key signs; it is asked for again after
// RetryPrevious. A document holding every key is kept for RetryPrevious
// too, so that a key replaced under its alias (a KMS key made again, as a
// restarted local KMS does) is published within it; the signers read their
// public halves from KMS again only after their own MaxAge.
type Publisher struct {
	Current  Signer
	Previous Signer // nil outside a rotation
	Clock    clock.Clock
	// OnPreviousError hears why the previous key was left out (a log line).
	OnPreviousError func(error)
	// RetryPrevious is how long a document without the previous key is
	// served before the key is asked for again; DefaultRetryPrevious if 0.
	RetryPrevious time.Duration

	mu      sync.Mutex
	doc     []byte
	retryAt time.Time
}

// DefaultRetryPrevious keeps a missing previous key from costing a KMS
// request per JWKS request.
const DefaultRetryPrevious = time.Minute

// Document returns the JWKS, building it when it is not kept.
func (p *Publisher) Document(ctx context.Context) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Clock.Now()
	if p.doc != nil && now.Before(p.retryAt) {
		return p.doc, nil
	}
	cur, err := p.Current.PublicKey(ctx)
	if err != nil {
		return nil, err
	}
	keys := []PublicKey{cur}
	if p.Previous != nil {
		prev, err := p.Previous.PublicKey(ctx)
		if err != nil {
			if p.OnPreviousError != nil {
				p.OnPreviousError(err)
			}
		} else {
			keys = append(keys, prev)
		}
	}
	doc, err := JWKS(keys...)
	if err != nil {
		return nil, err
	}
	retry := p.RetryPrevious
	if retry <= 0 {
		retry = DefaultRetryPrevious
	}
	p.doc, p.retryAt = doc, now.Add(retry)
	return doc, nil
}
