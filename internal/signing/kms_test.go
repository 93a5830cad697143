package signing_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"genjobs/internal/signing"
	"genjobs/internal/signing/kmstest"
)

// verifyRS checks a 64-byte r||s with the standard library, independently
// of the package's own code.
func verifyRS(pub *ecdsa.PublicKey, digest []byte, sig []byte) bool {
	if len(sig) != signing.SignatureSize {
		return false
	}
	return ecdsa.Verify(pub, digest, new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}

// TestKMSSignaturesVerify signs 10,000 digests through the SDK and the
// protocol-level server, concurrently and from a cold signer, and verifies
// every one against the server's own key; a subset goes the whole way
// through WebhookToken and Verify. About one r or s in 256 is shorter than
// 32 bytes in DER: the test insists on having met some, so a conversion
// without left-padding cannot pass.
func TestKMSSignaturesVerify(t *testing.T) {
	const (
		total   = 10_000
		workers = 8
		jwtEach = 20 // every 20th signature is a webhook token
	)
	srv := kmstest.NewServer(t)
	signer := signing.NewKMS(srv.Client(), srv.KeyID)
	want := srv.PublicKey(srv.KeyID)
	keys := signing.NewKeySet(mustPub(t, want))
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)

	var (
		next                   atomic.Int64
		shortR, shortS, tokens atomic.Int64
		wg                     sync.WaitGroup
		once                   sync.Once
		firstErr               error
	)
	failed := func(err error) { once.Do(func() { firstErr = err }) }
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				if i%jwtEach == 0 {
					body := []byte(`{"id":"job_` + itoa(i) + `","status":"completed"}`)
					c := signing.WebhookClaims{Issuer: "https://api.example.com", Audience: "https://hooks.example.com/h?i=" + itoa(i),
						Subject: "job_" + itoa(i), ID: "wh_" + itoa(i), IssuedAt: now, Body: body}
					tok, err := signing.WebhookToken(ctx, signer, c)
					if err != nil {
						failed(err)
						return
					}
					got, err := signing.Verify(tok, body, keys, signing.Expect{Audience: c.Audience, Issuer: c.Issuer, Now: now})
					if err != nil {
						failed(errors.New("token " + itoa(i) + ": " + err.Error()))
						return
					}
					if got.ID != c.ID || got.Subject != c.Subject {
						failed(errors.New("token " + itoa(i) + ": claims came back as " + got.ID + "/" + got.Subject))
						return
					}
					tokens.Add(1)
					continue
				}
				var msg [8]byte
				binary.BigEndian.PutUint64(msg[:], uint64(i))
				digest := sha256.Sum256(msg[:])
				sig, err := signer.Sign(ctx, digest)
				if err != nil {
					failed(err)
					return
				}
				if !verifyRS(want, digest[:], sig) {
					failed(errors.New("signature " + itoa(i) + " does not verify"))
					return
				}
				if sig[0] == 0 {
					shortR.Add(1)
				}
				if sig[32] == 0 {
					shortS.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	if got := srv.Calls("Sign"); got != total {
		t.Errorf("Sign requests: %d, want %d", got, total)
	}
	if got := srv.Calls("GetPublicKey"); got != 1 {
		t.Errorf("GetPublicKey requests: %d, want 1 for the life of the signer", got)
	}
	if tokens.Load() != total/jwtEach {
		t.Errorf("verified %d tokens, want %d", tokens.Load(), total/jwtEach)
	}
	// Expected about 37 each over 9,500 raw signatures; none at all has a
	// chance of about 1e-16.
	t.Logf("r shorter than 32 bytes: %d, s: %d", shortR.Load(), shortS.Load())
	if shortR.Load() == 0 || shortS.Load() == 0 {
		t.Fatalf("no signature with a short r (%d) or s (%d): the left-padding went untested", shortR.Load(), shortS.Load())
	}
}

func TestKMSPublicKey(t *testing.T) {
	srv := kmstest.NewServer(t)
	signer := signing.NewKMS(srv.Client(), srv.KeyARN())
	if n := srv.Calls("GetPublicKey"); n != 0 {
		t.Fatalf("NewKMS made %d requests; it must do no I/O", n)
	}
	pub, err := signer.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Key.Equal(srv.PublicKey(srv.KeyID)) {
		t.Fatal("GetPublicKey's key is not the server's key")
	}
	if want := mustPub(t, srv.PublicKey(srv.KeyID)).ID; pub.ID != want {
		t.Fatalf("kid %q, want the thumbprint %q", pub.ID, want)
	}
}

// Concurrent first callers share one GetPublicKey.
func TestKMSPublicKeyOnceUnderConcurrency(t *testing.T) {
	srv := kmstest.NewServer(t)
	signer := signing.NewKMS(srv.Client(), srv.KeyID)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := signer.Sign(context.Background(), sha256.Sum256([]byte("x")))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Calls("GetPublicKey"); n != 1 {
		t.Fatalf("GetPublicKey requests: %d, want 1", n)
	}
}

func TestKMSKeyNotFound(t *testing.T) {
	srv := kmstest.NewServer(t)
	signer := signing.NewKMS(srv.Client(), "alias/no-such-key")
	_, err := signer.Sign(context.Background(), sha256.Sum256([]byte("x")))
	if !errors.Is(err, signing.ErrKeyNotFound) {
		t.Fatalf("err = %v, want ErrKeyNotFound", err)
	}
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want the SDK's NotFoundException inside", err)
	}
	if !strings.Contains(err.Error(), "alias/no-such-key") {
		t.Fatalf("err = %q does not name the key", err)
	}
	if _, err := signing.WebhookToken(context.Background(), signer, claims(time.Now(), nil)); !errors.Is(err, signing.ErrKeyNotFound) {
		t.Fatalf("WebhookToken err = %v, want ErrKeyNotFound", err)
	}
	// A failed fetch is not remembered: the key may appear (a deployment
	// racing the key's creation) and the next caller asks again.
	srv.SetAlias("alias/no-such-key", srv.KeyID)
	if _, err := signer.PublicKey(context.Background()); err != nil {
		t.Fatalf("after the alias appeared: %v", err)
	}
	if n := srv.Calls("GetPublicKey"); n != 3 {
		t.Fatalf("GetPublicKey requests: %d, want 3", n)
	}
}

// A signer configured by alias keeps signing with the key it published even
// after the alias moves: the kid always names the key that signed.
func TestKMSAliasMovedKeepsKey(t *testing.T) {
	srv := kmstest.NewServer(t)
	srv.SetAlias("alias/webhooks", srv.KeyID)
	signer := signing.NewKMS(srv.Client(), "alias/webhooks")
	ctx := context.Background()
	first, err := signer.PublicKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newKey := srv.AddKey()
	srv.SetAlias("alias/webhooks", newKey)

	digest := sha256.Sum256([]byte("after the move"))
	sig, err := signer.Sign(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	if !verifyRS(first.Key, digest[:], sig) {
		t.Fatal("after the alias moved, the signer signed with a key other than the one it publishes")
	}
	// A new process (cold start) takes the new key.
	fresh, err := signing.NewKMS(srv.Client(), "alias/webhooks").PublicKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !fresh.Key.Equal(srv.PublicKey(newKey)) || fresh.ID == first.ID {
		t.Fatal("a new signer did not take the alias's new key")
	}
}

// KMS past its request quota answers ThrottlingException; the SDK retries,
// and when every attempt is throttled the caller gets the typed error.
func TestKMSThrottled(t *testing.T) {
	srv := kmstest.NewServer(t)
	ctx := context.Background()
	signer := signing.NewKMS(srv.Client(func(o *kms.Options) { o.RetryMaxAttempts = 1 }), srv.KeyID)
	if _, err := signer.PublicKey(ctx); err != nil {
		t.Fatal(err)
	}
	srv.ThrottleSigns(1)
	_, err := signer.Sign(ctx, sha256.Sum256([]byte("x")))
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ThrottlingException" {
		t.Fatalf("err = %v, want ThrottlingException", err)
	}
	if _, err := signer.Sign(ctx, sha256.Sum256([]byte("x"))); err != nil {
		t.Fatalf("after the throttle: %v", err)
	}
}

func itoa(i int64) string { return big.NewInt(i).String() }
