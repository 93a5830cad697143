// Package keyset keeps a remote JSON Web Key Set (RFC 7517) that
// signatures are verified against: a Cognito pool's ID-token keys, a fal
// route's webhook keys, and any further set a verifier needs.
// github.com/MicahParks/jwkset reads, parses and holds the document; this
// package decides when it is read: at first use, again when it is older
// than MaxAge, and again for a key it lacks at most once per RefreshAfter,
// one read at a time shared by every caller that needs it.
//
// Time is the caller's (its injected clock's now), and the document is
// read through the caller's HTTP client, so that its guard and redirect
// rules hold for the key set too.
package keyset

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/sync/singleflight"
)

var (
	// ErrUnknownKey: the set holds no key of that id, also after the read
	// that the rate allowed.
	ErrUnknownKey = errors.New("keyset: no key has that id")
	// ErrUnreadable: the set could not be fetched or parsed.
	ErrUnreadable = errors.New("keyset: the key set could not be read")
)

// Options configure a Set.
type Options struct {
	URL string // the JWKS document
	// HTTP reads it; nil: a client with a 5 s timeout.
	HTTP *http.Client
	// MaxAge: keys read longer ago are read again before use; 0: kept until
	// a key is missing.
	MaxAge time.Duration
	// RefreshAfter is the least time between two reads for a missing key,
	// so that forged key ids cannot make us hammer the set's host; 0: 30 s.
	RefreshAfter time.Duration
	// MaxBytes bounds the document; 0: 1 MiB.
	MaxBytes int64
}

// readTimeout bounds one read, which no single caller's cancellation
// ends: others may be waiting for it.
const readTimeout = 10 * time.Second

// Set is one remote key set. It is safe for concurrent use.
type Set struct {
	o     Options
	hc    *http.Client
	reads singleflight.Group

	mu   sync.Mutex
	keys jwkset.Storage // nil until the first successful read
	read time.Time      // when keys were read
	gen  int            // how many reads have succeeded
}

// New returns a Set. It does no I/O.
func New(o Options) *Set {
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	if o.RefreshAfter == 0 {
		o.RefreshAfter = 30 * time.Second
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = 1 << 20
	}
	hc := *o.HTTP
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = limitBody{base, o.MaxBytes}
	return &Set{o: o, hc: &hc}
}

// Key returns the public key named kid.
func (s *Set) Key(ctx context.Context, kid string, now time.Time) (crypto.PublicKey, error) {
	keys, err := s.get(ctx, now, false)
	if err != nil {
		return nil, err
	}
	if k, err := keys.KeyRead(ctx, kid); err == nil {
		return public(k), nil
	}
	if keys, err = s.get(ctx, now, true); err != nil {
		return nil, err
	}
	k, err := keys.KeyRead(ctx, kid)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, kid)
	}
	return public(k), nil
}

// Keys returns every public key of the set.
func (s *Set) Keys(ctx context.Context, now time.Time) ([]crypto.PublicKey, error) {
	keys, err := s.get(ctx, now, false)
	if err != nil {
		return nil, err
	}
	return all(ctx, keys)
}

// Refresh is for a signature that names no key id and that none of Keys
// verified: the set read again, unless it was read less than RefreshAfter
// before now (then ok is false and keys nil).
func (s *Set) Refresh(ctx context.Context, now time.Time) (keys []crypto.PublicKey, ok bool, err error) {
	s.mu.Lock()
	before := s.gen
	s.mu.Unlock()
	st, err := s.get(ctx, now, true)
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	after := s.gen
	s.mu.Unlock()
	if after == before {
		return nil, false, nil
	}
	keys, err = all(ctx, st)
	return keys, err == nil, err
}

// Keyfunc gives a JWT's key by its kid header, for jwt.Parse.
func (s *Set) Keyfunc(ctx context.Context, now time.Time) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return s.Key(ctx, kid, now)
	}
}

// get returns the keys held, read first when there are none, when they
// are older than MaxAge, or, for a missing key, when they were read at
// least RefreshAfter before now. Callers that need a read while one is
// under way wait for it instead of starting their own.
func (s *Set) get(ctx context.Context, now time.Time, missing bool) (jwkset.Storage, error) {
	s.mu.Lock()
	keys, read, gen := s.keys, s.read, s.gen
	s.mu.Unlock()
	age := now.Sub(read)
	if keys != nil && (s.o.MaxAge == 0 || age < s.o.MaxAge) && (!missing || age < s.o.RefreshAfter) {
		return keys, nil
	}
	ch := s.reads.DoChan("", func() (any, error) {
		s.mu.Lock()
		if s.gen != gen { // read since this caller looked: that answers it
			defer s.mu.Unlock()
			return s.keys, nil
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		st, err := jwkset.NewStorageFromHTTP(s.o.URL, jwkset.HTTPClientStorageOptions{Client: s.hc, Ctx: ctx, HTTPTimeout: readTimeout})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrUnreadable, s.o.URL, err)
		}
		s.mu.Lock()
		s.keys, s.read, s.gen = st, now, s.gen+1
		s.mu.Unlock()
		return st, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(jwkset.Storage), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, ctx.Err())
	}
}

func all(ctx context.Context, st jwkset.Storage) ([]crypto.PublicKey, error) {
	jwks, err := st.KeyReadAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	out := make([]crypto.PublicKey, 0, len(jwks))
	for _, k := range jwks {
		out = append(out, public(k))
	}
	return out, nil
}

// public is a key's public half: a set that lists private material is
// still only used to verify.
func public(k jwkset.JWK) crypto.PublicKey {
	if priv, ok := k.Key().(crypto.Signer); ok {
		return priv.Public()
	}
	return k.Key()
}

// limitBody cuts every answer's body at n bytes: a larger document fails
// to parse instead of filling memory.
type limitBody struct {
	rt http.RoundTripper
	n  int64
}

func (l limitBody) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, l.n), resp.Body}
	}
	return resp, err
}
