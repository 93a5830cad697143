package signing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"genjobs/internal/clock"
	"genjobs/internal/signing"
)

// flaky is a signer whose public key can be made unreadable, as a KMS key
// scheduled for deletion is; it counts the reads.
type flaky struct {
	*signing.LocalKey
	err   error
	reads int
}

func (f *flaky) PublicKey(ctx context.Context) (signing.PublicKey, error) {
	f.reads++
	if f.err != nil {
		return signing.PublicKey{}, f.err
	}
	return f.LocalKey.PublicKey(ctx)
}

func newFlaky(t *testing.T) *flaky {
	k, err := signing.GenerateLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	return &flaky{LocalKey: k}
}

func kids(t *testing.T, doc []byte, keys ...*flaky) []bool {
	t.Helper()
	set, err := signing.ParseJWKS(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out []bool
	for _, k := range keys {
		p, _ := k.LocalKey.PublicKey(context.Background())
		_, ok := set.Lookup(p.ID)
		out = append(out, ok)
	}
	return out
}

// The rotation's old key scheduled for deletion must not take the current
// key's JWKS down with it: receivers would reject every new webhook.
func TestPublisherServesTheCurrentKeyWhenThePreviousCannotBeRead(t *testing.T) {
	ctx := context.Background()
	cur, prev := newFlaky(t), newFlaky(t)
	prev.err = errors.New("KMSInvalidStateException: key is pending deletion")
	clk := &clock.Fixed{T: time.Date(2026, 11, 24, 19, 0, 0, 0, time.UTC)}
	var heard []error
	p := &signing.Publisher{Current: cur, Previous: prev, Clock: clk, OnPreviousError: func(err error) { heard = append(heard, err) }}

	doc, err := p.Document(ctx)
	if err != nil {
		t.Fatalf("previous key unreadable: %v; want the current key's document", err)
	}
	if got := kids(t, doc, cur, prev); !got[0] || got[1] {
		t.Errorf("current listed %v, previous listed %v; want true, false", got[0], got[1])
	}
	if len(heard) != 1 {
		t.Errorf("heard %d errors about the previous key; want 1", len(heard))
	}
	// Within a minute the document is served as it is: no KMS request a hit.
	if _, err := p.Document(ctx); err != nil || prev.reads != 1 {
		t.Errorf("second request: %v, %d reads of the previous key; want none more", err, prev.reads)
	}
	// Then the previous key is asked for again, and listed once readable.
	prev.err = nil
	clk.T = clk.T.Add(signing.DefaultRetryPrevious)
	doc, err = p.Document(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := kids(t, doc, cur, prev); !got[0] || !got[1] {
		t.Errorf("after the retry: current %v, previous %v; want both", got[0], got[1])
	}
	// A document with both keys is kept for a minute: no further KMS
	// requests within it; then it is made again from the signers (which
	// keep their public halves for their own MaxAge), so that a key made
	// anew under the alias is published.
	clk.T = clk.T.Add(signing.DefaultRetryPrevious / 2)
	if _, err := p.Document(ctx); err != nil || cur.reads != 2 || prev.reads != 2 {
		t.Errorf("kept document: %v; reads current %d previous %d, want 2 and 2", err, cur.reads, prev.reads)
	}
	clk.T = clk.T.Add(time.Hour)
	if _, err := p.Document(ctx); err != nil || cur.reads != 3 || prev.reads != 3 {
		t.Errorf("document after an hour: %v; reads current %d previous %d, want 3 and 3", err, cur.reads, prev.reads)
	}
}

func TestPublisherFailsWithoutTheCurrentKey(t *testing.T) {
	cur := newFlaky(t)
	cur.err = errors.New("AccessDeniedException")
	p := &signing.Publisher{Current: cur, Clock: &clock.Fixed{}}
	if _, err := p.Document(context.Background()); err == nil {
		t.Error("current key unreadable: no error; a JWKS without it verifies nothing")
	}
	cur.err = nil
	doc, err := p.Document(context.Background())
	if err != nil || !kids(t, doc, cur)[0] {
		t.Errorf("once readable: %v", err)
	}
}
